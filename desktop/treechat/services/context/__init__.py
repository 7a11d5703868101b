"""The context engine: from a head of the graph to the request that carries it (`engine`),
with its commit cache (`commit_cache`) and the sizing of a request's parts (`sizing`)."""

from .engine import ContextEngine, EngineConfig, FileSource, TurnPrep
from .sizing import stable_tools

__all__ = ["ContextEngine", "EngineConfig", "FileSource", "TurnPrep", "stable_tools"]
