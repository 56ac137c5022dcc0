#!/bin/sh
# Slurm Prolog= wrapper: see goodput-hook.sh.
exec "$(dirname "$0")/goodput-hook.sh" prolog
