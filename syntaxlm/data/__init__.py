"""Data: the synthetic treebank, corpus statistics, and download and verification of the public datasets."""
