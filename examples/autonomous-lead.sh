#!/bin/sh
# The lead agent of examples/autonomous.json, played by a script instead of a model: swarm runs
# it once per turn with the prompt as its last argument. Its first turn (the goal and the guide
# to the team) plans a four-task DAG with `swarm task create`; each later turn carries
# <task-notification> blocks, and once all four tasks are reported it ends the team with
# `swarm done`. Every prompt is kept in the team's lead/prompts.log for a look afterwards.
set -eu
prompt=$1
lead_dir="$SWARM_ROOT/teams/$SWARM_TEAM/lead"
printf '%s\n=====\n' "$prompt" >> "$lead_dir/prompts.log"
case $prompt in
*"You are the lead"*)
    # The descriptions are what shell teammates run; $SWARM_ROOT expands in their shells.
    swarm task create "Fetch" --description 'echo fetch >> "$SWARM_ROOT/autonomous.log"'
    swarm task create "Build a" --blocked-by 1 --description 'echo build-a >> "$SWARM_ROOT/autonomous.log"'
    swarm task create "Build b" --blocked-by 1 --description 'echo build-b >> "$SWARM_ROOT/autonomous.log"'
    swarm task create "Ship" --blocked-by 2 --blocked-by 3 --description 'echo ship >> "$SWARM_ROOT/autonomous.log"'
    echo "planned four tasks"
    ;;
*)
    seen=$(grep -o '<task-notification ' "$lead_dir/prompts.log" | wc -l)
    echo "$seen of 4 tasks reported"
    if [ "$seen" -ge 4 ]; then
        swarm done --summary "fetched, built a and b, shipped"
    fi
    ;;
esac
