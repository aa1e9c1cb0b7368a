package cgen

import (
	"regexp"
	"strings"

	"github.com/pkg/errors"

	"github.com/neoflow/neoflow/core/loops"
)

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// IsIdent reports whether s is a valid C identifier.
func IsIdent(s string) bool { return identRE.MatchString(s) }

// Identifier scheme, chosen so that generated names never collide with
// each other, with the helpers (nf_*) or with the parameters:
//
//	tensor X            t_X
//	loop variable k     v_k
//	split halves k.o    vo_k, vl_k (generally <base>.<s> -> v<s>_<base>)
//	local %acc          r_acc
func tensorName(name string) (string, error) { return checkIdent("t_"+name, name) }

func varName(name string) (string, error) {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return checkIdent("v"+name[i+1:]+"_"+name[:i], name)
	}
	return checkIdent("v_"+name, name)
}

func localName(name string) (string, error) {
	return checkIdent("r_"+strings.TrimPrefix(name, loops.LocalPrefix), name)
}

func checkIdent(c, orig string) (string, error) {
	if !IsIdent(c) || strings.Contains(c[2:], ".") {
		return "", errors.Errorf("name %q cannot be rendered as a C identifier", orig)
	}
	return c, nil
}

// commentSafe makes text safe inside a // comment: no line breaks, no
// backslash (line splice) and no '?' (trigraphs such as ??/ in C11 mode).
func commentSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\\' || r == '?':
			return '_'
		case r < ' ' || r == 0x7f:
			return ' '
		}
		return r
	}, s)
}
