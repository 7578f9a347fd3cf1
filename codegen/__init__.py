"""ELaTTA firmware compiler: trained KWS LSTM + V_k + CMA-ES config -> bare-metal Cortex-A9 C."""

__version__ = "0.1.0"
