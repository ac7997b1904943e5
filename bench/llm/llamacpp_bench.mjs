// llamacpp_bench.mjs - the rival on this machine's CPU: llama.cpp, as npm's node-llama-cpp ships
// it prebuilt (the registry serves no other build of it here: Debian 12 packages none), on the
// same GGUF file and the same threads as llm-bench. Prints lines as llm-bench --backend cpu does:
//   load: ... s
//   prefill N tokens: ... ms, ... tokens/s, ... cpu-s a token
//   decode batch 1: ... tokens/s (... ms a step), ... cpu-ms a token
// and with --greedy, the prompt's token ids and the greedy continuation's (the cross-check).
// The prompt's ids are the ones llm-bench makes (1 + i*7919 mod (vocab-1)), so both sides compute
// the same thing. CPU time (process.cpuUsage) is printed beside the wall clock because the
// machine is shared: the wall clock counts other people's work too.
// Usage (bench/llm/cpu-bench.sh installs it):
//   node llamacpp_bench.mjs MODEL.gguf [--prefill N] [--prompt N] [--decode N] [--threads N]
//                           [--reps N] [--greedy TEXT --greedy-n N]
import { getLlama, LlamaLogLevel } from "node-llama-cpp";

const argv = process.argv.slice(2);
const o = { prefill: 128, prompt: 16, decode: 32, threads: 2, reps: 3, greedy: null, greedyN: 32 };
const model = argv.shift();
const keys = { "--prefill": "prefill", "--prompt": "prompt", "--decode": "decode",
	"--threads": "threads", "--reps": "reps", "--greedy": "greedy", "--greedy-n": "greedyN" };
while (argv.length) {
	const k = keys[argv.shift()], v = argv.shift();
	if (!k || v === undefined) {
		console.error("usage: node llamacpp_bench.mjs MODEL.gguf [--prefill N] [--prompt N] " +
			"[--decode N] [--threads N] [--reps N] [--greedy TEXT --greedy-n N]");
		process.exit(2);
	}
	o[k] = k === "greedy" ? v : Number(v);
}

const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };
const llama = await getLlama({ gpu: false, build: "never", maxThreads: o.threads,
	logLevel: LlamaLogLevel.error });
console.log(`llama.cpp (node-llama-cpp prebuilt, cpu): ${llama.systemInfo.trim()}`);
let t0 = performance.now();
const m = await llama.loadModel({ modelPath: model, gpuLayers: 0 });
const load = (performance.now() - t0) / 1000;
const nvocab = m.fileInfo.metadata?.tokenizer?.ggml?.tokens?.length;
const ctxSize = Math.max(o.prefill, o.prompt + o.decode + 8, o.greedy ? 512 : 0) + 64;
t0 = performance.now();
const ctx = await m.createContext({ contextSize: ctxSize, threads: { ideal: o.threads, min: o.threads },
	batchSize: Math.max(o.prefill, o.prompt, o.greedy ? 512 : 0) });
console.log(`load: ${load.toFixed(2)} s (context ${((performance.now() - t0) / 1000).toFixed(2)} s more), vocab ${nvocab}`);
const V = nvocab ?? 32000;
const ids = (n) => Array.from({ length: n }, (_, i) => 1 + ((i * 7919) % (V - 1)));

if (o.greedy !== null) {
	const toks = m.tokenize(o.greedy);
	const prompt = m.tokens.bos !== null && m.tokens.shouldPrependBosToken ? [m.tokens.bos, ...toks] : toks;
	console.log(`prompt ids: ${prompt.join(" ")}`);
	const seq = ctx.getSequence();
	const out = [];
	for await (const tok of seq.evaluate(prompt, { temperature: 0 })) {
		out.push(tok);
		if (out.length >= o.greedyN)
			break;
	}
	// the generator ends at an end-of-generation token without yielding it
	console.log(`greedy ids: ${out.join(" ")}${out.length < o.greedyN ? " <eog>" : ""}`);
	console.log(`greedy text: ${JSON.stringify(m.detokenize(out))}`);
	seq.dispose();
}

let best = Infinity, bestCpu = 0;
for (let r = 0; r < o.reps + 1; r++) { // the first warms up
	const seq = ctx.getSequence();
	const w = performance.now(), c = cpu();
	await seq.evaluateWithoutGeneratingNewTokens(ids(o.prefill));
	const el = performance.now() - w;
	if (r > 0 && el < best)
		best = el, bestCpu = cpu() - c;
	seq.dispose();
}
console.log(`prefill ${o.prefill} tokens: ${best.toFixed(1)} ms, ${(o.prefill / best * 1000).toFixed(1)} tokens/s, ` +
	`${(bestCpu / o.prefill * 1000).toFixed(2)} cpu-ms a token`);

const seq = ctx.getSequence();
const warm = 3;
let n = 0, w0 = 0, c0 = 0;
for await (const tok of seq.evaluate(ids(o.prompt), { temperature: 0 })) {
	void tok;
	if (++n === warm)
		w0 = performance.now(), c0 = cpu();
	if (n >= o.decode + warm)
		break;
}
const el = performance.now() - w0, steps = n - warm;
console.log(`decode batch 1: ${(steps / el * 1000).toFixed(1)} tokens/s (${(el / steps).toFixed(1)} ms a step), ` +
	`${((cpu() - c0) / steps * 1000).toFixed(2)} cpu-ms a token, ${steps} steps [llama.cpp, ${o.threads} threads]`);
seq.dispose();
await ctx.dispose();
await m.dispose();
