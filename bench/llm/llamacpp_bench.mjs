// llamacpp_bench.mjs - the rival on this machine's CPU: llama.cpp, as npm's node-llama-cpp ships
// it prebuilt (the registry serves no other build of it here: Debian 12 packages none), on the
// same GGUF file and the same threads as llm-bench. Prints lines as llm-bench does:
//   prefill N tokens: ... tokens/s
//   decode batch 1: ... tokens/s
// Usage (bench/llm/cpu-bench.sh installs it): node llamacpp_bench.mjs MODEL.gguf PREFILL DECODE THREADS
import { getLlama } from "node-llama-cpp";

const [model, prefill = "128", decode = "64", threads = "2"] = process.argv.slice(2);
const llama = await getLlama({ gpu: false, build: "never" });
const m = await llama.loadModel({ modelPath: model });
const ctx = await m.createContext({ contextSize: Number(prefill) + Number(decode) + 64,
	threads: Number(threads), batchSize: Number(prefill) });
const vocab = m.tokenizer.length ?? 32000;
const prompt = [];
for (let i = 0; i < Number(prefill); i++)
	prompt.push(1 + ((i * 7919) % 1000));
let best = Infinity;
for (let r = 0; r < 3; r++) {
	const seq = ctx.getSequence();
	const t0 = performance.now();
	await seq.evaluateWithoutGeneratingNewTokens(prompt);
	best = Math.min(best, performance.now() - t0);
	seq.dispose();
}
console.log(`prefill ${prefill} tokens: ${best.toFixed(1)} ms, ${(Number(prefill) / best * 1000).toFixed(0)} tokens/s`);
const seq = ctx.getSequence();
let n = 0, t0 = 0;
for await (const tok of seq.evaluate(prompt.slice(0, 16), { temperature: 0 })) {
	if (n === 3)
		t0 = performance.now();
	if (++n >= Number(decode) + 3)
		break;
}
const el = performance.now() - t0;
console.log(`decode batch 1: ${(Number(decode) / el * 1000).toFixed(1)} tokens/s (${(el / Number(decode)).toFixed(2)} ms a step) [llama.cpp via node-llama-cpp, ${threads} threads, vocab ${vocab}]`);
await ctx.dispose();
await m.dispose();
