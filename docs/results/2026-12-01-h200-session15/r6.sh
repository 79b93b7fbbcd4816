#!/bin/bash
# session 15 run 4: as run 3 (r5.sh), the statistics now loaded at once (row_stats_one), two rounds
BIN=bin6 ROUNDS="0 1" exec bash "$(dirname "$0")/r5.sh"
