"""A small OpenAI-compatible HTTP server for one GGUF model, run as Treechat's child process
(`local/run_bundled_server.py`). It needs only the standard library and llama_cpp and imports
its own modules relatively, so the child never imports the rest of Treechat."""
