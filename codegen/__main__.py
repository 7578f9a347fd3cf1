from codegen.cli import main

# Guarded: `codegen bench` starts spawn-context worker processes, which import the main module.
if __name__ == "__main__":
    raise SystemExit(main())
