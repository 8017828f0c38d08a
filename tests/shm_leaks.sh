# Sourced by the tests that check /dev/shm is left clean. Tests run in
# parallel, so other jobs' segments come and go beside ours: a leak is a
# segment named since `before` that is still there a second later and whose
# creator (the pid in /weft-PID-STAMP) has exited. A live creator's segment
# belongs to a job still running.
shm_list() { ls /dev/shm 2>/dev/null | grep '^weft-' | sort; }

# shm_leaks BEFORE: print the leaked names, one a line
shm_leaks() {
    local fresh name pid
    fresh=$(comm -13 <(echo "$1") <(shm_list))
    [ -n "$fresh" ] || return 0
    sleep 1
    for name in $(comm -12 <(echo "$fresh") <(shm_list)); do
        pid=${name#weft-}
        pid=${pid%%-*}
        kill -0 "$pid" 2>/dev/null || echo "$name"
    done
}
