#!/usr/bin/env bash
# 134-rolling against an http function (issue 13's acceptance): graceful
# stop lets a call in flight finish, and a rolling deploy under a steady
# call load fails no call, each new instance ready (GET / answers) before
# the next old one is stopped.
ROLL_FORMAT=http
. "$(dirname "$0")/134-rolling.sh"
