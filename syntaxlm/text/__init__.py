"""Vocabularies: words with Berkeley unknown-word classes, sentencepiece subwords with atomic symbols."""
