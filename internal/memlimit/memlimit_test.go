package memlimit

import (
	"os"
	"runtime/debug"
	"testing"
)

func TestSoftLimit(t *testing.T) {
	for _, c := range []struct {
		name          string
		containerEnv  string
		goMemLimitSet bool
		want          int64
		wantOK        bool
		wantErr       bool
	}{
		{name: "no container limit", containerEnv: ""},
		{name: "256Mi", containerEnv: "268435456", want: 241591910, wantOK: true},
		{name: "GOMEMLIMIT wins", containerEnv: "268435456", goMemLimitSet: true},
		{name: "not a number", containerEnv: "256Mi", wantErr: true},
		{name: "zero", containerEnv: "0", wantErr: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok, err := SoftLimit(c.containerEnv, c.goMemLimitSet)
			if (err != nil) != c.wantErr {
				t.Fatalf("error %v, want error %t", err, c.wantErr)
			}
			if got != c.want || ok != c.wantOK {
				t.Errorf("SoftLimit(%q, %t) = %d, %t; want %d, %t", c.containerEnv, c.goMemLimitSet, got, ok, c.want, c.wantOK)
			}
		})
	}
}

func TestGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Run("default", func(t *testing.T) {
		t.Setenv(goGCEnv, "") // restored after the test
		os.Unsetenv(goGCEnv)
		debug.SetGCPercent(100)
		if got := GCPercentFromEnvironment(); got != DefaultGCPercent {
			t.Errorf("GCPercentFromEnvironment() = %d, want %d", got, DefaultGCPercent)
		}
		if now := debug.SetGCPercent(100); now != DefaultGCPercent {
			t.Errorf("runtime GC percent %d, want %d", now, DefaultGCPercent)
		}
	})
	t.Run("GOGC wins", func(t *testing.T) {
		t.Setenv(goGCEnv, "200")
		debug.SetGCPercent(200)
		if got := GCPercentFromEnvironment(); got != 200 {
			t.Errorf("GCPercentFromEnvironment() = %d with GOGC=200", got)
		}
		if now := debug.SetGCPercent(100); now != 200 {
			t.Errorf("runtime GC percent %d, want GOGC's 200", now)
		}
	})
}
