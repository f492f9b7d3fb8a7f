"""The multi-step jobs that compose the floors below: evaluate a saved model (``evaluation``, one
path the CLI's ``eval ppl`` calls too), reproduce a paper's table (``reproduce``), the quickstart
(``quickstart``), the learning curve and its sweeps (``curve``), reading-time evaluation
(``reading_times``), a model's SyntaxGym suites and BLiMP pairs scored into files a stopped run
resumes from (``suites``, ``blimp``), with the recipes they train (``recipes``, ``training``), the
progress line (``stages``) and the process pool its side-by-side stages run in (``pool``)."""
