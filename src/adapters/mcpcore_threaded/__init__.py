"""The blocking driver (threads) over httpcore."""
