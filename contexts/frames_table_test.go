package contexts

import (
	"strings"
	"testing"

	"github.com/ripple-run/ripple/protocol"
)

func TestPushPopRules(t *testing.T) {
	t.Parallel()
	method := protocol.MethodPointer{Module: "shop.cart", DefinedOnType: "Cart", Name: "total"}
	withSelf := protocol.NewExplicitCall(method)
	withSelf.ThisArgumentExpression = "Cart()"

	type op struct {
		push    *protocol.StackItem // nil: pop
		err     error
		errHas  string
		depthOK int // stack depth after the op
	}
	push := func(item protocol.StackItem, err error, errHas string, depth int) op {
		return op{push: &item, err: err, errHas: errHas, depthOK: depth}
	}
	pop := func(err error, depth int) op { return op{err: err, depthOK: depth} }
	tests := []struct {
		name string
		ops  []op
	}{
		{"explicit then locals then pops", []op{
			push(protocol.NewExplicitCall(mainMain), nil, "", 1),
			push(protocol.NewLocalCall("main:main/y"), nil, "", 2),
			push(protocol.NewLocalCall("main:foo/c"), nil, "", 3),
			pop(nil, 2), pop(nil, 1), pop(nil, 0),
			pop(ErrEmptyStack, 0),
		}},
		{"LocalCall on an empty stack", []op{
			push(protocol.NewLocalCall("main:main/y"), ErrInvalidStackItem, "LocalCall on an empty stack", 0),
		}},
		{"ExplicitCall on a non-empty stack", []op{
			push(protocol.NewExplicitCall(mainMain), nil, "", 1),
			push(protocol.NewExplicitCall(mainMain), ErrInvalidStackItem, "ExplicitCall on a stack of 1 items", 1),
		}},
		{"method needs self", []op{
			push(protocol.NewExplicitCall(method), ErrInvalidStackItem, "needs thisArgumentExpression", 0),
			push(withSelf, nil, "", 1),
		}},
		{"malformed items", []op{
			push(protocol.StackItem{Type: "Jump"}, ErrInvalidStackItem, `unknown type "Jump"`, 0),
			push(protocol.NewExplicitCall(protocol.MethodPointer{Module: "main"}), ErrInvalidStackItem, "not an identifier", 0),
			push(protocol.NewExplicitCall(mainMain), nil, "", 1),
			push(protocol.NewLocalCall("nope"), ErrInvalidStackItem, "invalid expression id", 1),
		}},
		{"pop of an empty stack", []op{pop(ErrEmptyStack, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t)
			if _, _, err := s.CreateContext(ctxA, "c1"); err != nil {
				t.Fatal(err)
			}
			for i, o := range tt.ops {
				var err error
				if o.push != nil {
					var f *Frame
					f, err = s.Push(ctxA, *o.push)
					if err == nil && (f.Depth != o.depthOK-1 || f.ContextID != ctxA || f.Item.Type != o.push.Type) {
						t.Errorf("op %d: pushed frame %+v", i, f)
					}
				} else {
					_, err = s.Pop(ctxA)
				}
				if o.err == nil && err != nil {
					t.Fatalf("op %d: %v", i, err)
				}
				if o.err != nil {
					wantErr(t, err, o.err, "op")
					if !strings.Contains(err.Error(), string(ctxA)) || !strings.Contains(err.Error(), o.errHas) {
						t.Errorf("op %d: error %q does not name the context and %q", i, err, o.errHas)
					}
				}
				stack, _ := s.Stack(nil, ctxA)
				if len(stack) != o.depthOK {
					t.Fatalf("op %d: depth %d, want %d", i, len(stack), o.depthOK)
				}
				for d, f := range stack {
					if f.Depth != d {
						t.Fatalf("op %d: frame %d has depth %d", i, d, f.Depth)
					}
				}
			}
		})
	}

	s := newStore(t)
	_, err := s.Push(ctxA, protocol.NewExplicitCall(mainMain))
	wantErr(t, err, ErrContextNotFound, "push to an unknown context")
	_, err = s.Pop(ctxA)
	wantErr(t, err, ErrContextNotFound, "pop of an unknown context")
	_, err = s.Stack(nil, ctxA)
	wantErr(t, err, ErrContextNotFound, "stack of an unknown context")
}

func TestStackAndTopFrame(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.store
	if _, err := s.Push(ctxA, protocol.NewLocalCall("main:main/y")); err != nil {
		t.Fatal(err)
	}
	stack, err := s.Stack(nil, ctxA)
	if err != nil || len(stack) != 2 {
		t.Fatalf("Stack: %v, %v", stack, err)
	}
	if stack[0].Item.MethodPointer != mainMain || stack[1].Item.ExpressionID != "main:main/y" {
		t.Errorf("stack %+v %+v", stack[0].Item, stack[1].Item)
	}
	top, err := s.TopFrame(nil, ctxA)
	if err != nil || top.Depth != 1 || top.CreateIndex != stack[1].CreateIndex {
		t.Errorf("TopFrame %+v, %v", top, err)
	}
	_, _ = s.Pop(ctxA)
	_, _ = s.Pop(ctxA)
	_, err = s.TopFrame(nil, ctxA)
	wantErr(t, err, ErrEmptyStack, "TopFrame of an empty stack")
}

func TestPopDropsThePoppedFrameUpdatesOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.store
	if err := s.RecordUpdates(b.bottom, []protocol.ExpressionUpdate{value("main:main/x", "6"), value("main:main/y", "30")}); err != nil {
		t.Fatal(err)
	}
	inner, err := s.Push(ctxA, protocol.NewLocalCall("main:main/y"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordUpdates(inner, []protocol.ExpressionUpdate{value("main:foo/c", "30")}); err != nil {
		t.Fatal(err)
	}
	popped, err := s.Pop(ctxA)
	if err != nil || popped.CreateIndex != inner.CreateIndex {
		t.Fatalf("Pop = %+v, %v", popped, err)
	}
	if ups, _ := s.FrameUpdates(nil, ctxA, 1, 0); len(ups) != 0 {
		t.Errorf("popped frame's updates survive: %+v", ups)
	}
	// The caller's updates are there to resend.
	if ups, _ := s.FrameUpdates(nil, ctxA, 0, 0); len(ups) != 2 {
		t.Errorf("caller's updates after pop: %+v", ups)
	}
}
