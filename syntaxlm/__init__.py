"""syntaxlm: syntactic language models (TG, PLM/SCLM, PRPN, SOM, DMLM) behind one interface."""

__version__ = "0.1.0"
