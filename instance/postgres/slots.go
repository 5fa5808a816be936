package postgres

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbpilot/dbpilot/instance"
	"github.com/dbpilot/dbpilot/instance/layout"
)

// inactiveSlotsQuery lists the physical slots named in $1 that no replica
// streams from.
const inactiveSlotsQuery = `
SELECT slot_name FROM pg_replication_slots
WHERE slot_type = 'physical' AND NOT active AND slot_name = ANY($1::text[])
ORDER BY slot_name`

// Actions are the PostgreSQL instance's authenticated endpoints: dropping
// the slots of replicas that no longer exist, so their WAL is freed.
func (e *Engine) Actions() map[string]http.Handler {
	return map[string]http.Handler{
		"POST " + layout.DropSlotsPath: instance.RequireToken(func() string { return e.Replication.Password }, http.HandlerFunc(e.dropSlots)),
	}
}

func (e *Engine) dropSlots(w http.ResponseWriter, r *http.Request) {
	var req layout.DropSlotsRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		http.Error(w, "the body is not a DropSlotsRequest", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	conn, err := e.connect(ctx)
	if err != nil {
		http.Error(w, "the engine does not answer", http.StatusServiceUnavailable)
		return
	}
	defer conn.Close(ctx)
	if recovering, err := inRecovery(ctx, conn); err != nil || recovering {
		http.Error(w, "only a primary drops slots", http.StatusConflict)
		return
	}
	rows, err := conn.Query(ctx, inactiveSlotsQuery, append([]string{}, req.Slots...))
	if err != nil {
		http.Error(w, "listing the slots failed", http.StatusInternalServerError)
		return
	}
	inactive, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		http.Error(w, "listing the slots failed", http.StatusInternalServerError)
		return
	}
	dropped := []string{}
	for _, slot := range inactive {
		// A replica that came back since the list was read holds its
		// slot active: dropping it fails, and it is kept.
		if _, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot($1)", slot); err == nil {
			dropped = append(dropped, slot)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(layout.DropSlotsResponse{Dropped: dropped})
}

// slotNames lists the physical replication slots.
func slotNames(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	rows, err := conn.Query(ctx, "SELECT slot_name FROM pg_replication_slots WHERE slot_type = 'physical' ORDER BY slot_name")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
