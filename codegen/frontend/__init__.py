"""Frontend: the user's model file (any way PyTorch saved it), the latent basis V_k and the TOML
config, read, matched and validated into the float IR."""
