package pipeline

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// enumSource reads the engine's source: for each type, the constants
// declared with it, and for each enum descriptor (var xEnum = enum[T]{...})
// the values it lists, by name.
func enumSource(t *testing.T) (consts, listed map[string][]string) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	require.NoError(t, err)
	consts, listed = map[string][]string{}, map[string][]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range gd.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				if gd.Tok == token.CONST {
					if id, ok := vs.Type.(*ast.Ident); ok {
						for _, n := range vs.Names {
							consts[id.Name] = append(consts[id.Name], n.Name)
						}
					}
					continue
				}
				for i, n := range vs.Names {
					if !strings.HasSuffix(n.Name, "Enum") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.CompositeLit)
					if !ok {
						continue
					}
					idx, ok := lit.Type.(*ast.IndexExpr)
					if !ok || idx.X.(*ast.Ident).Name != "enum" {
						continue
					}
					typ := idx.Index.(*ast.Ident).Name
					for _, el := range lit.Elts {
						if kv := el.(*ast.KeyValueExpr); kv.Key.(*ast.Ident).Name == "values" {
							for _, v := range kv.Value.(*ast.CompositeLit).Elts {
								listed[typ] = append(listed[typ], v.(*ast.Ident).Name)
							}
						}
					}
				}
			}
		}
	}
	return consts, listed
}

// TestEnumDescriptorsComplete: every constant of an enum is in its
// descriptor (else it could not be read back from the wire) and in the wire
// golden test's list (else its encoding would not be held to the golden
// files), in declaration order.
func TestEnumDescriptorsComplete(t *testing.T) {
	consts, listed := enumSource(t)
	require.Len(t, listed, len(wireEnums), "every enum has a descriptor and a place in wireEnums")
	for _, values := range wireEnums {
		var names []string
		for _, v := range values {
			names = append(names, v.name)
		}
		typ := reflect.TypeOf(values[0].v).Name()
		assert.Equal(t, consts[typ], listed[typ], "%s: the descriptor lists every constant in order", typ)
		assert.Equal(t, consts[typ], names, "%s: wireEnums lists every constant in order", typ)
	}
}
