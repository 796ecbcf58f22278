"""Where the course's files are: the repository root (kernels/, data/, notebooks/, lab_solutions/, docs/)
and the package's own folder, wherever a module sits in the package's tree."""
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent       # launchlab/
ROOT = PACKAGE.parent                                  # the repository: kernels/, data/, notebooks/, ...
