"""The models the user can reach: connections, the model catalog, the local model library and
API keys."""
