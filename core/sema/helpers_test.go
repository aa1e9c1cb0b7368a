package sema

import (
	"errors"
	"strings"
	"testing"

	"github.com/neoflow/neoflow/core/ir"
	"github.com/neoflow/neoflow/core/parse"
)

// mustParse parses src, failing the test on a syntax error.
func mustParse(t *testing.T, src string, opts parse.Options) *ir.Op {
	t.Helper()
	op, err := parse.Parse(src, opts)
	if err != nil {
		t.Fatalf("parse %q: %v", src, err)
	}
	return op
}

// ints is an integer constant table for parse.Options.
func ints(kv ...any) map[string]parse.ConstValue {
	m := map[string]parse.ConstValue{}
	for i := 0; i < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case int:
			m[kv[i].(string)] = parse.ConstValue{Int: int64(v)}
		case float64:
			m[kv[i].(string)] = parse.ConstValue{IsFloat: true, Float: v}
		}
	}
	return m
}

// checkErr verifies that err is a user-facing *ir.Error whose text contains
// every wanted fragment, or that err is nil when want is empty.
func checkErr(t *testing.T, err error, want ...string) {
	t.Helper()
	if len(want) == 0 {
		if err != nil {
			t.Fatalf("got error %v, want none", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got no error, want one containing %q", want)
	}
	var ie *ir.Error
	if !errors.As(err, &ie) {
		t.Errorf("got error of type %T, want *ir.Error", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("got error\n%v\nwant it to contain %q", err, w)
		}
	}
}

// at returns "line:col:" of the n-th (0-based) occurrence of sub in src.
func at(src, sub string, n int) string {
	off := 0
	for i := 0; ; i++ {
		j := strings.Index(src[off:], sub)
		if j < 0 {
			return "<not found>"
		}
		if i == n {
			off += j
			break
		}
		off += j + len(sub)
	}
	line := strings.Count(src[:off], "\n") + 1
	col := off - strings.LastIndex(src[:off], "\n")
	return itoa(line) + ":" + itoa(col) + ":"
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}
