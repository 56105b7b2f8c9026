# CPU accounting shared by the bench scripts, sourced after
# tests/integration/lib.sh (SERVER_PID).

CLK_TCK=$(getconf CLK_TCK)

# CPU ticks (utime + stime) in a /proc stat file (a process's or a
# thread's) so far.
stat_ticks()
{
	local stat
	stat=$(cat "$1") || return 1
	stat=${stat##*) }
	# After the comm field: state is field 3, utime 14, stime 15.
	awk '{ print $12 + $13 }' <<<"$stat"
}

# CPU ticks a process has used so far.
cpu_ticks()
{
	stat_ticks "/proc/$1/stat"
}

# CPU ticks every running server has used so far, summed.
servers_ticks()
{
	local i sum=0
	for i in "${!SERVER_PID[@]}"; do
		sum=$((sum + $(cpu_ticks "${SERVER_PID[$i]}")))
	done
	echo "$sum"
}
