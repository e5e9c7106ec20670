#!/usr/bin/env bash
# 133-slots against an http function (issue 13's acceptance): a Python
# http.server written as any Knative service is (it listens on $PORT), with
# concurrency 4 on max_instances 2: 200 concurrent calls all correct, never
# more than 8 in flight as the server itself measures, busy slots in
# status and stats.
SLOTS_FORMAT=http
. "$(dirname "$0")/133-slots.sh"
