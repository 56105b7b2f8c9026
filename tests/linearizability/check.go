package main

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// BlockResult is the outcome for one block.
type BlockResult struct {
	Block
	Result  porcupine.CheckResult
	Took    time.Duration
	Explain string // why, when Illegal
}

// Check checks every block in turn against one deadline, so that an
// illegal block is named.  It stops at the first block that is not Ok.
// Plain violations (see Violation) are found without a search, so they
// are reported even for histories too large for Porcupine's.
func Check(blocks []Block, timeout time.Duration) []BlockResult {
	var out []BlockResult
	deadline := time.Now().Add(timeout)

	for _, b := range blocks {
		left := time.Until(deadline)
		r := BlockResult{Block: b, Result: porcupine.Unknown}
		start := time.Now()
		if left > 0 {
			r.Explain = Violation(b.Ops)
		}
		switch {
		case r.Explain != "":
			r.Result = porcupine.Illegal
		case left > 0:
			r.Result = porcupine.CheckOperationsTimeout(RegisterModel,
				toPorcupine(b.Ops), left)
			if r.Result == porcupine.Illegal {
				r.Explain = "no order of the operations " +
					"explains every read (see the " +
					"visualization)"
			}
		}
		r.Took = time.Since(start)
		out = append(out, r)
		if r.Result != porcupine.Ok {
			break
		}
	}
	return out
}

// Visualize writes Porcupine's HTML view of one block's history, with
// its longest partial linearizations, to path.
func Visualize(b Block, timeout time.Duration, path string) error {
	_, info := porcupine.CheckOperationsVerbose(RegisterModel,
		toPorcupine(b.Ops), timeout)
	return porcupine.VisualizePath(RegisterModel, info, path)
}

func describe(op Op) string {
	kind := "read"
	if op.Write {
		kind = "write"
	}
	ret := fmt.Sprintf("%d", op.Ret)
	if op.Ret == Forever {
		ret = "never (failed)"
	}
	return fmt.Sprintf("%s of %s by client %d at %s [call %d, ret %s]",
		kind, op.Value, op.Client, op.Where, op.Call, ret)
}

// Violation looks for the plainest reasons a block's history has no
// linearization: a read of a value no write to the block produced, a
// read that returned before the write of its value started, and a stale
// read (its value was overwritten by a write that completed before the
// read started).  Each is proof on its own; "" when none is found, and
// anything subtler is left to Porcupine.
func Violation(ops []Op) string {
	writes := map[string][]Op{}
	for _, op := range ops {
		if op.Write {
			writes[op.Value] = append(writes[op.Value], op)
		}
	}
	for _, r := range ops {
		if r.Write || r.Value == ZeroValue {
			continue
		}
		ws := writes[r.Value]
		if len(ws) == 0 {
			return fmt.Sprintf("%s: no write to this block "+
				"produced that value", describe(r))
		}
		early := true
		for _, w := range ws {
			if w.Call <= r.Ret {
				early = false
			}
		}
		if early {
			return fmt.Sprintf("%s returned before the %s was "+
				"called", describe(r), describe(ws[0]))
		}
	}
	for _, r := range ops {
		if r.Write {
			continue
		}
		if s := staleness(r, writes[r.Value], ops); s != "" {
			return s
		}
	}
	return ""
}

// staleness reports a read r whose value is older than some write that
// completed after every write of that value and before r was called.
func staleness(r Op, ws []Op, ops []Op) string {
	for _, w2 := range ops {
		if !w2.Write || !w2.OK || w2.Value == r.Value ||
			w2.Ret >= r.Call {
			continue
		}
		newer := true
		for _, w := range ws {
			if w.Ret >= w2.Call {
				newer = false
			}
		}
		if !newer {
			continue
		}
		what := "the initial zeros"
		if len(ws) > 0 {
			what = describe(ws[0])
		}
		return fmt.Sprintf("stale %s: %s completed after %s and "+
			"before the read started", describe(r), describe(w2), what)
	}
	return ""
}
