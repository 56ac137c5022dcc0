#!/bin/sh
# Slurm Epilog= wrapper: see goodput-hook.sh.
exec "$(dirname "$0")/goodput-hook.sh" epilog
