"""Models on this machine: the bundled model (its GGUF file and the child process that serves
it, `bundled_model`), that child's own server (`bundled_server`, run by `run_bundled_server.py`),
and the model servers already running here, Ollama, LM Studio and llama.cpp
(`server_detection`)."""
