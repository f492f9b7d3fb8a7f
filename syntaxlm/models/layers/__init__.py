"""Components shared by the models: attention with masks and relative positions, transformer
blocks with segment memory."""
