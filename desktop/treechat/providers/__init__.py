"""The only package that imports litellm: streaming, usage, errors, keys, connections and their
model lists, the model library, and local models (`local/`)."""
