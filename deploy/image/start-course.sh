#!/bin/sh
# The course's notebooks into the learner's home, without overwriting a learner's own copy.
#
# The class image runs this before every learner's server (/usr/local/bin/before-notebook.d/, the Jupyter
# Docker Stacks start hooks); the local hub runs it before each spawn (deploy/local/jupyterhub_config.py).
# Zero to JupyterHub mounts each learner's persistent home at /home/jovyan, covering whatever the image put
# there: so the course itself lives outside the home (LAUNCHLAB_COURSE, /opt/launchlab in the image), and only
# the notebooks are copied in -- once: a notebook the learner already has is left as it is.
course="${LAUNCHLAB_COURSE:-/opt/launchlab}"
dest="${HOME}/launchlab"
mkdir -p "$dest"
copied=0
for nb in "$course"/notebooks/*.ipynb; do
  if [ ! -e "$dest/$(basename "$nb")" ]; then
    cp "$nb" "$dest/"
    copied=$((copied + 1))
  fi
done
echo "launchlab: $copied notebook(s) copied into $dest (a learner's own copies are kept)"
