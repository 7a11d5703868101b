"""Asyncio orchestration without Qt: chat turns, agent loop, attach/merge, occupancy."""
