from codegen.cli import main

raise SystemExit(main())
