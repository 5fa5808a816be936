package sim

import (
	"strings"
	"testing"
	"time"
)

func oracleTrace(t *testing.T, csv string) Trace {
	t.Helper()
	trace, err := ReadTrace("oracle", strings.NewReader("seconds,reads,writes\n"+csv))
	if err != nil {
		t.Fatal(err)
	}
	return trace
}

// A load at 300-600 s and 900-1200 s that needs 4 units (2.8 units of reads:
// 4 small pods or 2 medium or 1 large, each at 70 %; 3 small pods would
// average 93 %), and between and after them one that 1 small pod serves
// (0.5 units, 50 %).
const twoBursts = "0,0.5,0\n300,2.8,0\n600,0.5,0\n900,2.8,0\n1200,0.5,0\n1800,0.5,0\n"

func TestOracleFollowsTheLoadOutsideTheFlapWindow(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FlapWindow = 4 * time.Minute
	// Every interval from 0 to 1800 s: 40 of them in the bursts at 4 units,
	// the other 81 at 1 unit; each change is 5 minutes after the last.
	want := 15 * (40*4 + 81*1.0)
	if got := OracleCost(oracleTrace(t, twoBursts), cfg, WithinTolerance); got != want {
		t.Errorf("oracle cost %v, want %v", got, want)
	}
}

func TestOracleNeverChangesDirectionWithinTheFlapWindow(t *testing.T) {
	// With a 10-minute window, shrinking between the bursts would have to
	// grow again 5 minutes later: the start size's 4 units serve until the
	// last burst ends at 1200 s (80 intervals), then 1 small pod (41).
	want := 15 * (80*4 + 41*1.0)
	if got := OracleCost(oracleTrace(t, twoBursts), DefaultConfig(), WithinTolerance); got != want {
		t.Errorf("oracle cost %v, want %v", got, want)
	}
}

func TestOracleGivesAnUnservableLoadTheBiggestSize(t *testing.T) {
	// 200 units of writes fit no pod: the biggest size, 8 2xlarge pods of
	// 16 units, for the 5 intervals from 0 to 60 s.
	want := 15 * 5 * 8 * 16.0
	if got := OracleCost(oracleTrace(t, "0,0,200\n60,0,200\n"), DefaultConfig(), WithinTolerance); got != want {
		t.Errorf("oracle cost %v, want %v", got, want)
	}
}

func TestOracleCostsNoMoreThanAnyFixedSizeThatServes(t *testing.T) {
	// The steady trace: 1.5 units of reads and 0.5 of writes. 2 medium pods
	// serve it (62 % and 50 %) and so does every bigger size; the oracle
	// may only be cheaper.
	traces, err := ReadSuite("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, trace := range traces {
		if trace.Name != "steady" {
			continue
		}
		fixed := 15 * (trace.Duration()/15 + 1) * units(2, StartTier)
		if got := OracleCost(trace, DefaultConfig(), WithinTolerance); got > fixed {
			t.Errorf("oracle cost %v on steady, more than 2 medium pods throughout (%v)", got, fixed)
		}
		return
	}
	t.Fatal("no steady trace in the suite")
}

func TestOracleAtTargetHoldsTheAverageAtTheTarget(t *testing.T) {
	// 0.75 units of reads: 1 small pod at 75 % is within the HPA's
	// tolerance (77 %) but above its target (70 %), where 2 units are
	// needed (2 small pods or 1 medium, at 37.5 %). From the start size
	// (2 medium pods) the oracle shrinks at once; 5 intervals, 0 to 60 s.
	trace := oracleTrace(t, "0,0.75,0\n60,0.75,0\n")
	if got, want := OracleCost(trace, DefaultConfig(), WithinTolerance), 15*5*1.0; got != want {
		t.Errorf("oracle within tolerance cost %v, want %v", got, want)
	}
	if got, want := OracleCost(trace, DefaultConfig(), AtTarget), 15*5*2.0; got != want {
		t.Errorf("oracle at target cost %v, want %v", got, want)
	}
}
