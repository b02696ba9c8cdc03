#!/usr/bin/env bash
# shadow-setup.sh: store a candidate scriptlet and start its shadow on the
# berthd at $BERTH_URL (claims-ab.sh --setup-b), so that every claim of the
# default policy is ranked a second time off its path. The scriptlet is a
# plausible candidate: it refuses one name and otherwise picks, among the
# ten best ranked, the root whose name sorts first. With the argument
# "report" it prints the shadow's report instead (claims-ab.sh --after-b).
set -euo pipefail
: "${BERTH_URL:?}"
h=(-H 'x-auth-token: admin' -H 'openstack-api-version: placement latest')
if [ "${1:-}" = report ]; then
  curl -sf "${h[@]}" "$BERTH_URL/scriptlets/candidate/shadow"
  echo
  exit
fi
curl -sf -X PUT "${h[@]}" -H 'content-type: text/plain' "$BERTH_URL/scriptlets/candidate" --data-binary @- <<'STAR'
def instance_placement(request, candidate_members):
    if request.name == "forbidden":
        return "forbidden name"
    best = None
    for m in candidate_members[:10]:
        if best == None or m.name < best.name:
            best = m
    if best != None:
        set_target(best.uuid)
STAR
curl -sf -X PUT "${h[@]}" "$BERTH_URL/scriptlets/candidate/shadow" >/dev/null
echo "shadow of scriptlet candidate started on $BERTH_URL"
