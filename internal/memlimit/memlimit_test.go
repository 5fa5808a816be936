package memlimit

import "testing"

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
