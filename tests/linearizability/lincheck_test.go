package main

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestTestdata runs the command on every history in testdata/ and checks
// its exit status, and that an illegal one names the right block and
// reason and gets a visualization.
func TestTestdata(t *testing.T) {
	cases := []struct {
		file  string
		want  int
		block int64
		why   string
	}{
		{"linearizable.jsonl", exitOK, 0, ""},
		{"stale-read.jsonl", exitIllegal, 3, "stale read of c0s1"},
		{"never-written.jsonl", exitIllegal, 2, "no write to this block"},
		{"zeros-after-write.jsonl", exitIllegal, 0, "stale read of 0"},
		{"new-old-inversion.jsonl", exitIllegal, 0, "no order"},
		{"failed-write-undone.jsonl", exitIllegal, 0, "no order"},
		{"failed-write-early.jsonl", exitIllegal, 0, "returned before"},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := filepath.Join("testdata", c.file)
			viz := filepath.Join(t.TempDir(), "viz.html")
			got := run([]string{"-viz", viz, path})
			if got != c.want {
				t.Fatalf("exit %d, want %d", got, c.want)
			}
			if c.want == exitOK {
				if _, err := os.Stat(viz); err == nil {
					t.Fatalf("visualization written for a " +
						"linearizable history")
				}
				return
			}
			ops, err := ReadHistoryFile(path)
			if err != nil {
				t.Fatal(err)
			}
			res := Check(Prepare(ops), time.Minute)
			last := res[len(res)-1]
			if last.Result != porcupine.Illegal ||
				last.Block.Block != c.block {
				t.Fatalf("block %d %s, want block %d Illegal",
					last.Block.Block, last.Result, c.block)
			}
			if !strings.Contains(last.Explain, c.why) {
				t.Fatalf("explanation %q lacks %q", last.Explain,
					c.why)
			}
			// The shortcut of Violation aside, Porcupine
			// itself must find no linearization.
			var all []Op
			for _, b := range Prepare(ops) {
				all = append(all, b.Ops...)
			}
			if porcupine.CheckOperations(RegisterModel,
				toPorcupine(all)) {
				t.Fatalf("Porcupine finds %s linearizable", c.file)
			}
			html, err := os.ReadFile(viz)
			if err != nil {
				t.Fatalf("no visualization: %v", err)
			}
			if !strings.Contains(string(html), "<html") {
				t.Fatalf("visualization is not HTML")
			}
		})
	}
}

// TestBadInput: malformed lines are rejected with status 2, never
// checked as if they were something else.
func TestBadInput(t *testing.T) {
	lines := []string{
		`not json`,
		`{"client": 0, "op": "x", "block": 0, "value": 1, "call": 0, "ret": 1, "ok": true}`,
		`{"client": 0, "op": "w", "block": 0, "value": 1, "call": 0, "ok": true}`,
		`{"client": 0, "op": "w", "block": 0, "call": 0, "ret": 1, "ok": true}`,
		`{"client": 0, "op": "r", "block": 0, "value": 1, "call": 5, "ret": 1, "ok": true}`,
		`{"client": 0, "op": "r", "block": -1, "value": 1, "call": 0, "ret": 1, "ok": true}`,
		`{"op": "r", "block": 0, "value": 1, "call": 0, "ret": 1, "ok": true}`,
		`{"client": 0, "op": "r", "block": 0, "value": 1.5, "call": 0, "ret": 1, "ok": true}`,
		`{"client": 0, "op": "r", "block": 0, "value": "", "call": 0, "ret": 1, "ok": true}`,
		`{"client": 0, "op": "w", "block": 0, "value": null, "call": 0, "ok": false}`,
		`{"client": 0, "op": "r", "block": 0, "value": 1, "call": 0, "ret": 1, "ok": true} {}`,
	}
	dir := t.TempDir()
	for i, l := range lines {
		path := filepath.Join(dir, fmt.Sprintf("bad%d.jsonl", i))
		if err := os.WriteFile(path, []byte(l+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := run([]string{path}); got != exitUsage {
			t.Errorf("%s: exit %d, want %d", l, got, exitUsage)
		}
	}
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{empty}, {}, {"-timeout", "0",
		"testdata/linearizable.jsonl"}, {"no/such/file"}} {
		if got := run(args); got != exitUsage {
			t.Errorf("%v: exit %d, want %d", args, got, exitUsage)
		}
	}
}

// TestUnknown: a check out of time is Unknown, which the command turns
// into status 3, not a pass.
func TestUnknown(t *testing.T) {
	ops, err := ReadHistoryFile("testdata/linearizable.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	res := Check(Prepare(ops), -time.Second)
	if len(res) != 1 || res[0].Result != porcupine.Unknown {
		t.Fatalf("got %+v, want one Unknown block", res)
	}
	if got := report(Prepare(ops), res, "", time.Second, 0,
		false); got != exitTimeout {
		t.Fatalf("exit %d, want %d", got, exitTimeout)
	}
}

// TestDropFailedWrites: failed reads and failed writes nobody read are
// dropped; a failed write whose value was read is kept with an
// infinite return time.
func TestDropFailedWrites(t *testing.T) {
	ops, err := ReadHistoryFile("testdata/linearizable.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	blocks := Prepare(ops)
	if len(blocks) != 2 || blocks[0].Dropped != 2 ||
		blocks[0].FailedWrites != 1 {
		t.Fatalf("got %+v", blocks)
	}
	for _, op := range blocks[0].Ops {
		if !op.OK && (op.Value != "c2s1" || op.Ret != Forever) {
			t.Fatalf("kept %+v", op)
		}
	}
}

// simulate makes a random linearizable history: each operation takes
// effect at a random point inside its interval, in the order of those
// points; some writes fail (and take effect or not).
func simulate(r *rand.Rand, clients, blocks, perClient int) []Op {
	type ev struct {
		at int64
		op *Op
	}
	var evs []ev
	var ops []*Op
	for c := 0; c < clients; c++ {
		now := int64(r.Intn(100))
		for s := 1; s <= perClient; s++ {
			op := &Op{Client: c, Block: int64(r.Intn(blocks)),
				Write: r.Intn(2) == 0, Call: now, OK: true}
			op.Ret = now + 1 + int64(r.Intn(300))
			if op.Write {
				op.Value = fmt.Sprintf("c%ds%d", c, s)
				op.OK = r.Intn(20) != 0
			}
			if !op.OK && r.Intn(2) == 0 {
				// Took effect long after the caller gave up.
				evs = append(evs, ev{op.Ret + int64(r.Intn(2000)), op})
			} else if op.OK {
				evs = append(evs, ev{op.Call +
					r.Int63n(op.Ret-op.Call+1), op})
			}
			ops = append(ops, op)
			now = op.Ret + int64(r.Intn(50))
		}
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	state := map[int64]string{}
	for _, e := range evs {
		if e.op.Write {
			state[e.op.Block] = e.op.Value
		} else if v, ok := state[e.op.Block]; ok {
			e.op.Value = v
		} else {
			e.op.Value = ZeroValue
		}
	}
	out := make([]Op, 0, len(ops))
	for _, op := range ops {
		if !op.OK {
			op.Ret = Forever
		}
		out = append(out, *op)
	}
	return out
}

// TestSimulated: random linearizable histories of the size the fault
// scenarios record pass, and the same histories with one read changed
// to a value nobody wrote fail.
func TestSimulated(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 5; i++ {
		ops := simulate(r, 4, 4, 400)
		res := Check(Prepare(ops), time.Minute)
		if last := res[len(res)-1]; last.Result != porcupine.Ok {
			t.Fatalf("history %d: block %d %s: %s", i,
				last.Block.Block, last.Result, last.Explain)
		}
		for j := range ops {
			if !ops[j].Write {
				ops[j].Value = "garbage:0"
				break
			}
		}
		res = Check(Prepare(ops), time.Minute)
		if last := res[len(res)-1]; last.Result != porcupine.Illegal {
			t.Fatalf("history %d with garbage: %s", i, last.Result)
		}
	}
}

// TestJSONRoundTrip: what the recorder writes (and the final reads it
// appends) parses back as written.
func TestJSONRoundTrip(t *testing.T) {
	rec := map[string]interface{}{"client": 1000, "op": "r", "block": 9,
		"value": "c3s4", "call": int64(1) << 60,
		"ret": int64(1)<<60 + 5, "ok": true}
	line, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	op, err := parseRecord(line, "x:1")
	if err != nil {
		t.Fatal(err)
	}
	if op.Client != 1000 || op.Block != 9 || op.Value != "c3s4" ||
		op.Call != int64(1)<<60 || op.Ret != op.Call+5 || !op.OK ||
		op.Write {
		t.Fatalf("got %+v", op)
	}
}
