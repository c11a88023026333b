"""Exact discrete noise from a keyed ChaCha20 stream: the generator, the samplers and their privacy statement."""
