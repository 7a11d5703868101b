"""The only package that imports litellm: streaming, usage, errors, ledger, keys, local model."""
