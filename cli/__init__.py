"""The command-line layer: what every entry point shares and no library code imports.

  boundary.py     `cli.run(main)`: a quiet console, a full log file, one error boundary
  flags.py        the absl flags of the training scripts and flags -> frozen configs
  training_run.py every training script's flags, stage check and run, for the task it
                  is given

Pipeline position: the top of every script (`run_*.py`, `export_*.py`,
`extract_features.py`, `demo.py`, the data tools). Importing it quiets
TensorFlow's start-up (`common.quiet`), so scripts import it before anything that imports
TensorFlow.
"""

from cli.boundary import LOG_FILE, quiet_console, run

__all__ = ["LOG_FILE", "quiet_console", "run"]
