package controllers

import (
	"testing"
	"time"
)

func TestScheduleTakesAnOptionalSecondsField(t *testing.T) {
	from := time.Date(2026, 11, 24, 12, 0, 7, 0, time.UTC)
	for spec, want := range map[string]time.Time{
		"*/15 * * * * *": from.Add(8 * time.Second),
		"30 0 */6 * * *": time.Date(2026, 11, 24, 12, 0, 30, 0, time.UTC),
		"0 */6 * * *":    time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC),
		"@daily":         time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC),
	} {
		schedule, err := scheduleParser.Parse(spec)
		if err != nil {
			t.Errorf("%q: %v", spec, err)
			continue
		}
		if got := schedule.Next(from); !got.Equal(want) {
			t.Errorf("%q: next run after %s at %s, want %s", spec, from.Format(time.TimeOnly), got, want)
		}
	}
}
