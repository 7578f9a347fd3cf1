"""ELaTTA firmware compiler: trained KWS LSTM + V_k + CMA-ES config -> bare-metal Cortex-A9 C."""

from codegen.base.version import __version__

__all__ = ["__version__", "compile"]


def compile(*args: object, **kwargs: object) -> object:  # noqa: A001 - the API's name
    """Compile an in-memory ``nn.Module`` (`codegen.pipeline.api.compile`, which documents the
    arguments); imported lazily so ``import codegen`` stays light."""
    from codegen.pipeline.api import compile as _compile

    return _compile(*args, **kwargs)  # type: ignore[arg-type]
