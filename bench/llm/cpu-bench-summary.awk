# cpu-bench-summary.awk: cpu-bench.sh's log into one table (load, prefill, decode: llama.cpp,
# gpool, and gpool over llama.cpp) and the greedy cross-check's verdict per model.
function num(s, re) { return match(s, re) ? substr(s, RSTART, RLENGTH) + 0 : -1 }
function ratio(a, b) { return a > 0 && b > 0 ? sprintf("%.2fx", a / b) : "-" }
/^== summary/ { exit }
/^== greedy / { greedy = 1; name = $3; sub(/,$/, "", name); side = $NF; next }
/^== / { greedy = 0; key = $2 " " $3 " " $4 "t"; side = $6;
	if (!(key in seen)) { seen[key] = 1; keys[nk++] = key } next }
greedy && /^prompt ids:/ { pid[name, side] = substr($0, 12) }
greedy && /^greedy ids:/ { gid[name, side] = substr($0, 12); if (!(name in gseen)) { gseen[name] = 1; gn[ng++] = name } }
greedy { next }
/^load: / { load[key, side] = num($0, "[0-9.]+") }
/loaded in / { sub(/.*loaded in /, ""); load[key, side] = $1 + 0 }
/^prefill / { pre[key, side] = num($0, "[0-9.]+ tokens\\/s"); precpu[key, side] = num($0, "[0-9.]+ cpu-ms") }
/^decode batch 1:/ { dec[key, side] = num($0, "[0-9.]+ tokens\\/s"); deccpu[key, side] = num($0, "[0-9.]+ cpu-ms") }
END {
	printf "%-26s %15s %26s %26s %18s\n", "model, threads", "load s (l/g)", "prefill tok/s (l/g, g/l)", "decode tok/s (l/g, g/l)", "decode cpu-ms/tok"
	for (i = 0; i < nk; i++) {
		k = keys[i]; l = "llama.cpp"; g = "gpool"
		printf "%-26s %7.2f/%-7.2f %9.1f/%-8.1f %7s %9.2f/%-8.2f %7s %8.1f/%-8.1f\n", k,
			load[k, l], load[k, g], pre[k, l], pre[k, g], ratio(pre[k, g], pre[k, l]),
			dec[k, l], dec[k, g], ratio(dec[k, g], dec[k, l]), deccpu[k, l], deccpu[k, g]
	}
	for (i = 0; i < ng; i++) {
		n = gn[i]; l = "llama.cpp"; g = "gpool"
		split(gid[n, l], a, " "); split(gid[n, g], b, " "); same = 0
		while (same < length(a) && same < length(b) && a[same + 1] == b[same + 1]) same++
		most = length(a) > length(b) ? length(a) : length(b)
		printf "greedy %s: prompt ids %s; %d of %d greedy tokens the same before the first difference\n",
			n, (pid[n, l] == pid[n, g] ? "identical" : "DIFFER"), same, most
	}
}
