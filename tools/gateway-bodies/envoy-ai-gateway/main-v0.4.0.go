// promgen for ai-gateway v0.4.0 (its metrics API of per-operation factories): serve the Prometheus /metrics body
// of the external processor after the requests of main.go, with v0.4.0's setup (cmd/extproc/mainlib/main.go:
// ParseRequestHeaderAttributeMapping of -metricsRequestHeaderAttributes, the registry, the OTel Prometheus
// reader, NewMetricsFromEnv, NewChatCompletionFactory and NewEmbeddingsFactory; admin.go's handler) and its
// call order (internal/extproc/chatcompletion_processor.go: SetBackend, StartRequest, the models, the usage of
// each response body chunk, the completion at the end of the stream or on a status that is not 2xx). The usage
// is passed as the OpenAI translator reads it from an upstream answer. With -idle, no request is made.
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

	"github.com/envoyproxy/ai-gateway/internal/filterapi"
	"github.com/envoyproxy/ai-gateway/internal/internalapi"
	"github.com/envoyproxy/ai-gateway/internal/metrics"
)

// the flag value of -metricsRequestHeaderAttributes (the controller's metricsRequestHeaderAttributes)
const headerMapping = "x-tenant-id:tenant.id"

type request struct {
	tenant   string // "" sends no x-tenant-id header
	model    string
	status   int
	prompt   uint32
	complete uint32
	cached   uint32
	stream   bool
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

func headersOf(path, tenant string) map[string]string {
	h := map[string]string{":path": path, ":method": "POST"}
	if tenant != "" {
		h["x-tenant-id"] = tenant
	}
	return h
}

func chat(ctx context.Context, m metrics.ChatCompletionMetrics, backend *filterapi.Backend, r request) {
	headers := headersOf("/v1/chat/completions", r.tenant)
	m.SetBackend(backend)
	m.StartRequest(headers)
	m.SetOriginalModel(r.model)
	m.SetRequestModel(r.model)
	time.Sleep(3 * time.Millisecond)
	if r.status != 200 {
		m.RecordRequestCompletion(ctx, false, headers)
		return
	}
	m.SetResponseModel(r.model)
	if !r.stream {
		m.RecordTokenUsage(ctx, r.prompt, r.cached, r.complete, headers)
		m.RecordRequestCompletion(ctx, true, headers)
		return
	}
	chunks := [][2]uint32{{0, 1}, {0, 20}, {r.prompt, r.complete}}
	for i, u := range chunks {
		eos := i == len(chunks)-1
		time.Sleep(2 * time.Millisecond)
		m.RecordTokenLatency(ctx, u[1], eos, headers)
		if eos {
			m.RecordTokenUsage(ctx, u[0], 0, u[1], headers)
		}
	}
	m.RecordRequestCompletion(ctx, true, headers)
}

func embed(ctx context.Context, m metrics.EmbeddingsMetrics, backend *filterapi.Backend, tenant, model string, prompt uint32) {
	headers := headersOf("/v1/embeddings", tenant)
	m.SetBackend(backend)
	m.StartRequest(headers)
	m.SetOriginalModel(model)
	m.SetRequestModel(model)
	time.Sleep(2 * time.Millisecond)
	m.SetResponseModel(model)
	m.RecordTokenUsage(ctx, prompt, headers)
	m.RecordRequestCompletion(ctx, true, headers)
}

func main() {
	idle := flag.Bool("idle", false, "serve no request before reading /metrics")
	flag.Parse()
	ctx := context.Background()
	attrs, err := internalapi.ParseRequestHeaderAttributeMapping(headerMapping)
	must(err)
	promRegistry := prometheus.NewRegistry()
	promReader, err := otelprom.New(otelprom.WithRegisterer(promRegistry))
	must(err)
	meter, shutdown, err := metrics.NewMetricsFromEnv(ctx, os.Stdout, promReader)
	must(err)
	defer func() { _ = shutdown(ctx) }()
	chatF := metrics.NewChatCompletionFactory(meter, attrs)
	embedF := metrics.NewEmbeddingsFactory(meter, attrs)

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
			chat(ctx, chatF(), vllm, r)
		}
		embed(ctx, embedF(), vllm, "team-b", "BAAI/bge-small-en-v1.5", 8)
	}

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
