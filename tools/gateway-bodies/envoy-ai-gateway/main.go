// promgen: serve the Prometheus /metrics body of Envoy AI Gateway's external processor after a fixed set of
// requests, with the processor's own metrics setup (cmd/extproc/mainlib/main.go: the registry, the OTel
// Prometheus reader, NewMeterFromEnv, NewMetricsFactory with -metricsRequestHeaderAttributes, the admin
// server's promhttp handler) and its own call order (internal/extproc/processor_impl.go), the token usage
// computed by its OpenAI translator from an OpenAI-shaped upstream answer. Built inside the ai-gateway
// module at the tag (it imports internal packages); prints the body as a plain GET receives it.
// With -idle, no request is made: the body of a processor that has served none yet.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"

	"github.com/envoyproxy/ai-gateway/internal/apischema/openai"
	"github.com/envoyproxy/ai-gateway/internal/filterapi"
	"github.com/envoyproxy/ai-gateway/internal/metrics"
	"github.com/envoyproxy/ai-gateway/internal/requestheaderattrs"
	"github.com/envoyproxy/ai-gateway/internal/translator"
)

// the flag value of -metricsRequestHeaderAttributes (the controller's metricsRequestHeaderAttributes)
const headerMapping = "x-tenant-id:tenant.id"

type request struct {
	tenant   string // "" sends no x-tenant-id header
	model    string
	status   int
	prompt   int
	complete int
	cached   int
	stream   bool
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func chat(ctx context.Context, f metrics.Factory, backend *filterapi.Backend, r request) {
	headers := map[string]string{":path": "/v1/chat/completions", ":method": "POST", "content-type": "application/json"}
	if r.tenant != "" {
		headers["x-tenant-id"] = r.tenant
	}
	m := f.NewMetrics()
	// server.go: SetBackend before the upstream filter's request headers
	m.SetBackend(backend)
	m.StartRequest(headers)
	m.SetOriginalModel(r.model)
	m.SetRequestModel(r.model)
	tr := translator.NewChatCompletionOpenAIToOpenAITranslator("v1", "")
	raw, _ := json.Marshal(map[string]any{"model": r.model, "stream": r.stream, "messages": []map[string]string{{"role": "user", "content": "hi"}}})
	req := &openai.ChatCompletionRequest{}
	must(json.Unmarshal(raw, req))
	_, _, err := tr.RequestBody(raw, req, false)
	must(err)
	time.Sleep(3 * time.Millisecond)
	if r.status != 200 {
		// processor_impl.go: a status that is not good records the completion as failed, no token usage
		m.RecordRequestCompletion(ctx, false, headers)
		return
	}
	var costs metrics.TokenUsage
	respHeaders := map[string]string{":status": "200"}
	if !r.stream {
		usage := map[string]any{"prompt_tokens": r.prompt, "completion_tokens": r.complete, "total_tokens": r.prompt + r.complete}
		if r.cached > 0 {
			usage["prompt_tokens_details"] = map[string]any{"cached_tokens": r.cached}
		}
		body, _ := json.Marshal(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": r.model,
			"choices": []map[string]any{{"index": 0, "finish_reason": "stop", "message": map[string]string{"role": "assistant", "content": "hello"}}},
			"usage":   usage,
		})
		_, _, u, responseModel, err := tr.ResponseBody(respHeaders, bytes.NewReader(body), true, nil)
		must(err)
		costs.Override(u)
		m.SetResponseModel(responseModel)
		m.RecordTokenUsage(ctx, costs, headers)
		m.RecordRequestCompletion(ctx, true, headers)
		return
	}
	chunk := func(s string) string { return "data: " + s + "\n\n" }
	chunks := []string{
		chunk(fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","created":1,"model":%q,"choices":[{"index":0,"delta":{"role":"assistant","content":"a"}}]}`, r.model)),
		chunk(fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","created":1,"model":%q,"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}`, r.model)),
		chunk(fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","created":1,"model":%q,"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, r.model, r.prompt, r.complete, r.prompt+r.complete)) + "data: [DONE]\n\n",
	}
	for i, c := range chunks {
		eos := i == len(chunks)-1
		time.Sleep(2 * time.Millisecond)
		_, _, u, responseModel, err := tr.ResponseBody(respHeaders, bytes.NewReader([]byte(c)), eos, nil)
		must(err)
		costs.Override(u)
		m.SetResponseModel(responseModel)
		out, _ := costs.OutputTokens()
		m.RecordTokenLatency(ctx, out, eos, headers)
		if eos {
			m.RecordTokenUsage(ctx, costs, headers)
		}
	}
	m.RecordRequestCompletion(ctx, true, headers)
}

func embed(ctx context.Context, f metrics.Factory, backend *filterapi.Backend, tenant, model string, prompt int) {
	headers := map[string]string{":path": "/v1/embeddings", ":method": "POST", "x-tenant-id": tenant}
	m := f.NewMetrics()
	m.SetBackend(backend)
	m.StartRequest(headers)
	m.SetOriginalModel(model)
	m.SetRequestModel(model)
	tr := translator.NewEmbeddingOpenAIToOpenAITranslator("v1", "")
	raw, _ := json.Marshal(map[string]any{"model": model, "input": "hi"})
	req := &openai.EmbeddingRequest{}
	must(json.Unmarshal(raw, req))
	_, _, err := tr.RequestBody(raw, req, false)
	must(err)
	time.Sleep(2 * time.Millisecond)
	body, _ := json.Marshal(map[string]any{
		"object": "list", "model": model, "data": []map[string]any{{"object": "embedding", "index": 0, "embedding": []float64{0.1, 0.2}}},
		"usage": map[string]int{"prompt_tokens": prompt, "total_tokens": prompt},
	})
	_, _, u, responseModel, err := tr.ResponseBody(map[string]string{":status": "200"}, bytes.NewReader(body), true, nil)
	must(err)
	var costs metrics.TokenUsage
	costs.Override(u)
	m.SetResponseModel(responseModel)
	m.RecordTokenUsage(ctx, costs, headers)
	m.RecordRequestCompletion(ctx, true, headers)
}

func main() {
	idle := flag.Bool("idle", false, "serve no request before reading /metrics")
	flag.Parse()
	ctx := context.Background()
	mapping := headerMapping
	_, metricsAttrs, _, err := requestheaderattrs.ResolveAll(nil, nil, &mapping, nil)
	must(err)
	promRegistry := prometheus.NewRegistry()
	promReader, err := otelprom.New(otelprom.WithRegisterer(promRegistry))
	must(err)
	meter, shutdown, err := metrics.NewMeterFromEnv(ctx, os.Stdout, promReader)
	must(err)
	defer func() { _ = shutdown(ctx) }()
	chatF := metrics.NewMetricsFactory(meter, metricsAttrs, metrics.GenAIOperationChat)
	embedF := metrics.NewMetricsFactory(meter, metricsAttrs, metrics.GenAIOperationEmbedding)

	vllm := &filterapi.Backend{Name: "vllm-llama", Schema: filterapi.VersionedAPISchema{Name: filterapi.APISchemaOpenAI}}
	llama := "meta-llama/Llama-3.1-8B-Instruct"
	requests := []request{
		{tenant: "team-a", model: llama, status: 200, prompt: 30, complete: 5},
		{tenant: "team-a", model: llama, status: 200, prompt: 12, complete: 40, stream: true},
		{tenant: "team-b", model: llama, status: 200, prompt: 100, complete: 10},
		{tenant: "team-c", model: llama, status: 429},
		{tenant: "team-d", model: llama, status: 200, prompt: 50, complete: 6, cached: 20},
		{tenant: "", model: llama, status: 200, prompt: 7, complete: 3},
	}
	if !*idle {
		for _, r := range requests {
			chat(ctx, chatF, vllm, r)
		}
		embed(ctx, embedF, vllm, "team-b", "BAAI/bge-small-en-v1.5", 8)
	}

	// cmd/extproc/mainlib/admin.go: /metrics is promhttp.HandlerFor(registry, promhttp.HandlerOpts{})
	srv := httptest.NewServer(promhttp.HandlerFor(promRegistry, promhttp.HandlerOpts{}))
	defer srv.Close()
	get, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
	must(err)
	get.Header.Set("Accept", "text/plain") // what the exporter sends
	resp, err := http.DefaultClient.Do(get)
	must(err)
	defer func() { _ = resp.Body.Close() }()
	fmt.Fprintln(os.Stderr, "Content-Type:", resp.Header.Get("Content-Type"))
	_, err = io.Copy(os.Stdout, resp.Body)
	must(err)
}
