"""The async driver (asyncio and trio, via anyio) over httpcore."""
