// promgen for ai-gateway v0.3.0 (its metrics API before NewMetricsFactory): serve the Prometheus /metrics body of
// the external processor after the requests of main.go, with v0.3.0's setup (cmd/extproc/mainlib/main.go:
// ParseRequestHeaderLabelMapping of -metricsRequestHeaderLabels, startMetricsServer's registry, reader, meter
// and handler) and v0.3.0's call order (internal/extproc/server.go: SetBackend before the upstream filter's
// request headers; chatcompletion_processor.go, embeddings_processor.go: completion recorded by SetBackend and
// by every response body chunk, token usage per chunk). The usage is passed as the OpenAI translator reads it
// from an upstream answer (prompt, completion and total tokens; the streamed usage on the last chunk only).
// With -idle, no request is made.
package main

import (
	"context"
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
	metricsdk "go.opentelemetry.io/otel/sdk/metric"

	"github.com/envoyproxy/ai-gateway/filterapi"
	"github.com/envoyproxy/ai-gateway/internal/internalapi"
	"github.com/envoyproxy/ai-gateway/internal/metrics"
)

// the flag value of -metricsRequestHeaderLabels (the controller's metricsRequestHeaderLabels)
const headerMapping = "x-tenant-id:tenant_id"

type request struct {
	tenant   string // "" sends no x-tenant-id header
	model    string
	status   int
	prompt   uint32
	complete uint32
	stream   bool
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func headersOf(path, tenant, model string) map[string]string {
	h := map[string]string{":path": path, ":method": "POST", "x-ai-eg-model": model}
	if tenant != "" {
		h["x-tenant-id"] = tenant
	}
	return h
}

func chat(ctx context.Context, m metrics.ChatCompletionMetrics, backend *filterapi.Backend, r request) {
	headers := headersOf("/v1/chat/completions", r.tenant, r.model)
	// server.go: SetBackend first; its deferred completion records success (model and start not yet set)
	m.SetBackend(backend)
	m.RecordRequestCompletion(ctx, true, headers)
	m.StartRequest(headers)
	m.SetModel(headers["x-ai-eg-model"])
	time.Sleep(3 * time.Millisecond)
	if r.status != 200 {
		// ProcessResponseBody: a status that is not good returns before the usage, and its deferred
		// completion records err == nil
		m.RecordRequestCompletion(ctx, true, headers)
		return
	}
	chunks := [][3]uint32{{r.prompt, r.complete, r.prompt + r.complete}}
	if r.stream {
		chunks = [][3]uint32{{0, 0, 0}, {0, 0, 0}, {r.prompt, r.complete, r.prompt + r.complete}}
	}
	for _, u := range chunks {
		time.Sleep(2 * time.Millisecond)
		m.RecordTokenUsage(ctx, u[0], u[1], u[2], headers)
		if r.stream {
			m.RecordTokenLatency(ctx, u[1], headers)
		}
		m.RecordRequestCompletion(ctx, true, headers)
	}
}

func embed(ctx context.Context, m metrics.EmbeddingsMetrics, backend *filterapi.Backend, tenant, model string, prompt uint32) {
	headers := headersOf("/v1/embeddings", tenant, model)
	m.SetBackend(backend)
	m.RecordRequestCompletion(ctx, true, headers)
	m.StartRequest(headers)
	m.SetModel(headers["x-ai-eg-model"])
	time.Sleep(2 * time.Millisecond)
	m.RecordTokenUsage(ctx, prompt, prompt, headers)
	m.RecordRequestCompletion(ctx, true, headers)
}

func main() {
	idle := flag.Bool("idle", false, "serve no request before reading /metrics")
	flag.Parse()
	ctx := context.Background()
	labels, err := internalapi.ParseRequestHeaderLabelMapping(headerMapping)
	must(err)
	// startMetricsServer
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	must(err)
	provider := metricsdk.NewMeterProvider(metricsdk.WithReader(exporter))
	meter := provider.Meter("envoyproxy/ai-gateway")
	chatM := metrics.NewChatCompletion(meter, labels)
	embedM := metrics.NewEmbeddings(meter, labels)

	vllm := &filterapi.Backend{Name: "vllm-llama", Schema: filterapi.VersionedAPISchema{Name: filterapi.APISchemaOpenAI}}
	llama := "meta-llama/Llama-3.1-8B-Instruct"
	requests := []request{
		{tenant: "team-a", model: llama, status: 200, prompt: 30, complete: 5},
		{tenant: "team-a", model: llama, status: 200, prompt: 12, complete: 40, stream: true},
		{tenant: "team-b", model: llama, status: 200, prompt: 100, complete: 10},
		{tenant: "team-c", model: llama, status: 429},
		{tenant: "team-d", model: llama, status: 200, prompt: 50, complete: 6},
		{tenant: "", model: llama, status: 200, prompt: 7, complete: 3},
	}
	if !*idle {
		for _, r := range requests {
			chat(ctx, chatM, vllm, r)
		}
		embed(ctx, embedM, vllm, "team-b", "BAAI/bge-small-en-v1.5", 8)
	}

	srv := httptest.NewServer(promhttp.HandlerFor(registry, promhttp.HandlerOpts{EnableOpenMetrics: true}))
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
