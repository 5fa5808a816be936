package scale_test

import (
	"context"
	"math"
	"testing"
	"time"
)

// TestSmallFleetSettles runs the benchmark's two runs on 20 Databases, for
// `make test`: the audit log counts each of the raw client's requests once
// (its creates and applies are known exactly), the operator converges, its
// reconcile durations are read, and in steady state it writes nothing.
func TestSmallFleetSettles(t *testing.T) {
	const n = 20
	ctx := context.Background()
	operatorConfig, rawConfig, template := prepare(ctx, t)

	raw := runRaw(ctx, t, rawConfig, template, "smoke-raw", n)
	namespaces := len(namespacesOf("smoke-raw", n))
	// Per Database: six Secrets (credentials, replication, the two
	// certificate authorities, the server and the client certificate)
	// and the designation created; the engine ConfigMap, three Services
	// and the StatefulSet applied. Per namespace: the metrics Secret.
	if want := 7*n + namespaces; raw.requests["create"] != want {
		t.Errorf("audit log: the raw client made %d creates, want %d (%s)", raw.requests["create"], want, raw.requests)
	}
	if want := 5 * n; raw.requests["patch"] != want {
		t.Errorf("audit log: the raw client made %d applies, want %d (%s)", raw.requests["patch"], want, raw.requests)
	}

	op := runOperator(ctx, t, operatorConfig, "smoke-db", n, 20*time.Second)
	t.Logf("raw %.1fs, operator %.1fs; operator requests %s; steady %s; reconcile p50 %.0f ms p99 %.0f ms", raw.seconds, op.seconds, op.requests, op.steadyRequests, op.p50*1000, op.p99*1000)
	if op.requests.writes() < 3*n {
		t.Errorf("audit log: the operator made %d writes while converging %d Databases (%s)", op.requests.writes(), n, op.requests)
	}
	if writes := op.steadyRequests.writes(); writes != 0 {
		t.Errorf("the operator wrote %d times in steady state (%s)", writes, op.steadyRequests)
	}
	if math.IsNaN(op.p99) || op.p99 <= 0 || op.p50 > op.p99 {
		t.Errorf("reconcile durations p50 %v p99 %v", op.p50, op.p99)
	}
	if op.peakKiB < op.idleKiB || op.cpuSeconds <= 0 {
		t.Errorf("manager footprint: idle %d KiB, peak %d KiB, %.2f CPU s", op.idleKiB, op.peakKiB, op.cpuSeconds)
	}
}
