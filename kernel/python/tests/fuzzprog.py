"""Random programs and edit scripts for the differential invariant test.

A Program is a ``main`` function body (a list of statements, each with the
names it defines and their types) plus a helper module built from a few
parameters. Variables have fixed types by name (ints, lists, dicts,
functions), so a generated statement is well typed wherever the names it
reads are defined; edits may still leave names undefined, which gives
NameError panics: also behaviour to compare.

The patterns of mutation through calls and module state are in the language: a project function
mutating its argument (add_to), a mutating call inside a larger
expression, a nested function rebinding a frame name through `nonlocal`,
a closure whose state advances with each call (make_counter), iterators and
generators consumed by next/sum/list, a name aliasing an element of a
container (grid rows), module state a helper rebinds (`global COUNT` in
bump) and a function of the body rebinding a module global (`global G`),
and `del`; and (issue 27) scripts whose functions rebind the frame's
names through `global` (Program.script), imports inside the body and inside functions it
defines, module state written from the body (`helpers.Y = a`,
`helpers.LOG.append(a)`), and an object whose __getitem__ mutates it
(Tally).
"""

import re

INTS = ["a", "b", "c", "n", "k", "m"]
LISTS = ["xs", "ys", "zs"]
DICTS = ["d", "e"]
FUNCS = ["f", "g"]
ITERS = ["it", "jt"]
GRIDS = ["grid"]
TALLIES = ["tl"]
TYPES = {**{n: "int" for n in INTS}, **{n: "list" for n in LISTS}, **{n: "dict" for n in DICTS}, **{n: "func" for n in FUNCS},
         **{n: "iter" for n in ITERS}, **{n: "grid" for n in GRIDS}, **{n: "tally" for n in TALLIES}}


class Stmt:
    def __init__(self, text, defs):
        self.text = text  # without the body indentation; may span lines
        self.defs = dict(defs)

    def copy(self):
        return Stmt(self.text, self.defs)


class Program:
    def __init__(self, stmts, helper_params, script=False):
        self.stmts = stmts
        self.helper = dict(helper_params)
        # A script (main run as __main__, PROTOCOL 7.1): the statements are
        # the module's top level, and a function of it that declares
        # `global a` rebinds a name of the frame.
        self.script = script

    def copy(self):
        return Program([s.copy() for s in self.stmts], self.helper, self.script)

    def main_source(self):
        lines = ["import helpers", "from helpers import h0, h1, h2, h3, add_to, bump, make_counter, gen, Tally", "",
                 "G = 0", "", ""]
        indent = ""
        if not self.script:
            lines.append("def main():")
            indent = "    "
            if not self.stmts:
                lines.append("    pass")
        for s in self.stmts:
            for line in s.text.split("\n"):
                lines.append(indent + line)
        return "\n".join(lines) + "\n"

    def helper_source(self):
        p = self.helper
        extra = "    t = t + %d\n" % p["extra"] if p["extra"] else ""
        return (
            "K = %(K)d\n\n\n"
            "def h0(a, b):\n"
            "    t = a * %(c1)d\n" + extra + "    u = t + b + K\n"
            "    return u\n\n\n"
            "def h1(xs):\n"
            "    ys = list(xs)\n"
            "    ys.append(%(c2)d)\n"
            "    return ys\n\n\n"
            "def h2(d):\n"
            "    out = dict(d)\n"
            "    out['h'] = len(out) + %(c3)d\n"
            "    return out\n\n\n"
            "def h3(a):\n"
            "    v = h0(a, %(c4)d)\n"
            "    w = [v, a]\n"
            "    w.append(v * 2)\n"
            "    if v > %(c5)d:\n"
            "        return v - 1\n"
            "    return sum(w)\n\n\n"
            "COUNT = 0\n\n\n"
            "def add_to(xs, v):\n"
            "    xs.append(v + %(c2)d)\n\n\n"
            "def bump(k):\n"
            "    global COUNT\n"
            "    COUNT += k\n"
            "    return COUNT\n\n\n"
            "def make_counter(start):\n"
            "    n = start\n\n"
            "    def inc(v):\n"
            "        nonlocal n\n"
            "        n += v\n"
            "        return n\n"
            "    return inc\n\n\n"
            "def gen(k):\n"
            "    for i in range(k %% 5 + %(c3)d %% 3):\n"
            "        yield i * %(c1)d\n\n\n"
            "Y = %(c4)d\n"
            "LOG = []\n\n\n"
            "class Tally:\n"
            "    def __init__(self):\n"
            "        self.n = 0\n\n"
            "    def __getitem__(self, i):\n"
            "        self.n += 1\n"
            "        return self.n * %(c1)d + i\n"
        ) % p

    def sources(self):
        return {"helpers": self.helper_source(), "main": self.main_source()}

    def env_before(self, pos):
        env = {}
        for s in self.stmts[:pos]:
            env.update(s.defs)
        return env


def _names(env, kind):
    return sorted(n for n, t in env.items() if t == kind)


self_names = _names


class Generator:
    def __init__(self, rng, script=False):
        self.rng = rng
        self.script = script  # programs are scripts (Program.script)

    def const(self):
        return self.rng.randint(0, 9)

    def helper_params(self):
        r = self.rng
        return {"K": r.randint(0, 5), "c1": r.randint(1, 4), "c2": r.randint(0, 9), "c3": r.randint(0, 9),
                "c4": r.randint(0, 9), "c5": r.randint(0, 30), "extra": 0}

    def program(self, size):
        stmts = []
        env = {}
        for _ in range(size):
            s = self.statement(env)
            stmts.append(s)
            env.update(s.defs)
        return Program(stmts, self.helper_params(), self.script)

    def statement(self, env):
        r = self.rng
        ints, lists, dicts, funcs = (_names(env, t) for t in ("int", "list", "dict", "func"))
        iters, grids = _names(env, "iter"), _names(env, "grid")
        options = [self._int_const]
        if ints:
            options += [self._int_arith, self._int_helper, self._aug_int, self._print, self._list_display,
                        self._lambda, self._nested_def, self._walrus, self._maybe_raise, self._if_return,
                        self._dict_display, self._int_helper_module]
            if len(ints) >= 2:
                options.append(self._int_arith)
        if lists:
            options += [self._append, self._list_helper, self._len_sum, self._comprehension, self._aug_list,
                        self._for_append, self._sort, self._genexp, self._index, self._while_pop, self._alias]
        if lists and ints:
            options += [self._if_block, self._append, self._comprehension]
        if dicts:
            options += [self._dict_set, self._dict_get, self._dict_helper, self._dict_pop]
        if funcs and ints:
            options += [self._call_func, self._call_func]
        # mutation through calls, module state
        if ints:
            options += [self._nonlocal_def, self._counter, self._bump, self._global_def, self._read_g,
                        self._make_iter, self._make_grid]
        if lists:
            options += [self._add_to, self._add_in_expr, self._pop_in_expr, self._make_iter]
        if iters:
            options += [self._consume, self._consume]
        if grids:
            options += [self._row, self._grid_sum, self._for_rows]
        # issue 27: imports inside functions, module state from the body, a mutating __getitem__
        if ints:
            options += [self._import_in_body, self._import_in_def, self._set_module_global, self._read_module_global,
                        self._log_append, self._make_tally]
        options.append(self._log_len)
        if _names(env, "tally"):
            options += [self._tally_get, self._tally_n]
        if len(env) > 2:
            options.append(self._del)
        if self.script:
            # At a module's top level `return` and `nonlocal` do not
            # compile; a function declaring `global a` rebinds the frame's a
            # when called (a global writer), a call of it as a statement.
            options = [o for o in options if o not in (self._if_return, self._nonlocal_def)]
            if ints:
                options += [self._global_writer, self._global_writer]
            if funcs and ints:
                options.append(self._call_stmt)
        return r.choice(options)(env, ints, lists, dicts, funcs)

    def _global_writer(self, env, ints, lists, dicts, funcs):
        t, i = self._new("func"), self._pick(ints)
        return Stmt("def %s(v):\n    global %s\n    %s = %s + v + %d\n    return %s" % (t, i, i, i, self.const(), i),
                    {t: "func"})

    def _call_stmt(self, env, ints, lists, dicts, funcs):
        return Stmt("%s(%s)" % (self._pick(funcs), self._pick(ints)), {})

    # -- templates: each returns a Stmt ------------------------------------------

    def _pick(self, names):
        return self.rng.choice(names)

    def _new(self, kind):
        pool = {"int": INTS, "list": LISTS, "dict": DICTS, "func": FUNCS, "iter": ITERS, "grid": GRIDS}[kind]
        return self.rng.choice(pool)

    def _int_const(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        return Stmt("%s = %d" % (t, self.const()), {t: "int"})

    def _int_arith(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        return Stmt("%s = %s + %s * %d" % (t, self._pick(ints), self._pick(ints), self.const()), {t: "int"})

    def _int_helper(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        if self.rng.random() < 0.5:
            return Stmt("%s = h0(%s, %d)" % (t, self._pick(ints), self.const()), {t: "int"})
        return Stmt("%s = h3(%s)" % (t, self._pick(ints)), {t: "int"})

    def _int_helper_module(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        return Stmt("%s = helpers.h0(%s, %s)" % (t, self._pick(ints), self._pick(ints)), {t: "int"})

    def _aug_int(self, env, ints, lists, dicts, funcs):
        t = self._pick(ints)
        return Stmt("%s += %d" % (t, self.const() + 1), {t: "int"})

    def _print(self, env, ints, lists, dicts, funcs):
        return Stmt("print(%s)" % self._pick(ints), {})

    def _list_display(self, env, ints, lists, dicts, funcs):
        t = self._new("list")
        return Stmt("%s = [%s, %s, %d]" % (t, self._pick(ints), self._pick(ints), self.const()), {t: "list"})

    def _dict_display(self, env, ints, lists, dicts, funcs):
        t = self._new("dict")
        extra = (", 'n': len(%s)" % self._pick(lists)) if lists else ""
        return Stmt("%s = {'a': %s%s}" % (t, self._pick(ints), extra), {t: "dict"})

    def _lambda(self, env, ints, lists, dicts, funcs):
        t = self._new("func")
        return Stmt("%s = lambda v: v + %s" % (t, self._pick(ints)), {t: "func"})

    def _nested_def(self, env, ints, lists, dicts, funcs):
        t = self._new("func")
        return Stmt("def %s(v):\n    return v * %s + %d" % (t, self._pick(ints), self.const()), {t: "func"})

    def _call_func(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        return Stmt("%s = %s(%s)" % (t, self._pick(funcs), self._pick(ints)), {t: "int"})

    def _walrus(self, env, ints, lists, dicts, funcs):
        t, w = self._new("int"), self._new("int")
        if t == w:
            return self._int_const(env, ints, lists, dicts, funcs)
        return Stmt("%s = (%s := %s + 1) * 2" % (t, w, self._pick(ints)), {t: "int", w: "int"})

    def _maybe_raise(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        return Stmt("%s = %s // (%s - %d)" % (t, self._pick(ints), self._pick(ints), self.const()), {t: "int"})

    def _if_return(self, env, ints, lists, dicts, funcs):
        i = self._pick(ints)
        return Stmt("if %s %% %d == %d:\n    return %s" % (i, self.rng.randint(2, 5), self.rng.randint(0, 1), i), {})

    def _append(self, env, ints, lists, dicts, funcs):
        l = self._pick(lists)
        v = self._pick(ints) if ints else str(self.const())
        return Stmt("%s.append(%s)" % (l, v), {l: "list"})

    def _list_helper(self, env, ints, lists, dicts, funcs):
        t = self._new("list")
        return Stmt("%s = h1(%s)" % (t, self._pick(lists)), {t: "list"})

    def _len_sum(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        l = self._pick(lists)
        return Stmt("%s = len(%s) + sum(%s)" % (t, l, l), {t: "int"})

    def _comprehension(self, env, ints, lists, dicts, funcs):
        t = self._new("list")
        factor = self._pick(ints) if ints else str(self.const())
        return Stmt("%s = [v * %s for v in %s if v %% 2 == 0]" % (t, factor, self._pick(lists)), {t: "list"})

    def _genexp(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        add = self._pick(ints) if ints else str(self.const())
        return Stmt("%s = sum(v + %s for v in %s)" % (t, add, self._pick(lists)), {t: "int"})

    def _aug_list(self, env, ints, lists, dicts, funcs):
        l = self._pick(lists)
        return Stmt("%s += [%d]" % (l, self.const()), {l: "list"})

    def _for_append(self, env, ints, lists, dicts, funcs):
        l = self._pick(lists)
        return Stmt("for v in range(%d):\n    %s.append(v + %d)" % (self.rng.randint(0, 3), l, self.const()), {l: "list"})

    def _sort(self, env, ints, lists, dicts, funcs):
        l = self._pick(lists)
        return Stmt("%s.%s()" % (l, self.rng.choice(["sort", "reverse"])), {l: "list"})

    def _index(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        l = self._pick(lists)
        return Stmt("try:\n    %s = %s[%d]\nexcept IndexError:\n    %s = -1" % (t, l, self.rng.randint(0, 4), t), {t: "int"})

    def _while_pop(self, env, ints, lists, dicts, funcs):
        l = self._pick(lists)
        return Stmt("while len(%s) > %d:\n    %s.pop()" % (l, self.rng.randint(2, 6), l), {l: "list"})

    def _alias(self, env, ints, lists, dicts, funcs):
        t = self._new("list")
        return Stmt("%s = %s" % (t, self._pick(lists)), {t: "list"})

    def _if_block(self, env, ints, lists, dicts, funcs):
        i = self._pick(ints)
        l = self._pick(lists)
        t = self._new("int")
        return Stmt(
            "if %s > %d:\n    %s.append(%s)\nelse:\n    %s = %d" % (i, self.const(), l, i, t, self.const()),
            {l: "list", t: "int"},
        )

    def _dict_set(self, env, ints, lists, dicts, funcs):
        m = self._pick(dicts)
        v = self._pick(ints) if ints else str(self.const())
        return Stmt("%s['%s'] = %s" % (m, self.rng.choice("abc"), v), {m: "dict"})

    def _dict_get(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        return Stmt("%s = %s.get('%s', 0) + %d" % (t, self._pick(dicts), self.rng.choice("abc"), self.const()), {t: "int"})

    def _dict_helper(self, env, ints, lists, dicts, funcs):
        t = self._new("dict")
        return Stmt("%s = h2(%s)" % (t, self._pick(dicts)), {t: "dict"})

    def _dict_pop(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        return Stmt("%s = %s.pop('%s', 0)" % (t, self._pick(dicts), self.rng.choice("abc")), {t: "int"})

    # -- issue 27: imports inside functions, module state from the body, __getitem__ ---

    def _import_in_body(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        if self.rng.random() < 0.5:
            return Stmt("import helpers as hx\n%s = hx.K * %s" % (t, self._pick(ints)), {t: "int"})
        return Stmt("from helpers import K as KK\n%s = KK + %s" % (t, self._pick(ints)), {t: "int"})

    def _import_in_def(self, env, ints, lists, dicts, funcs):
        t = self._new("func")
        return Stmt("def %s(v):\n    import helpers\n    return v * helpers.K + %d" % (t, self.const()), {t: "func"})

    def _set_module_global(self, env, ints, lists, dicts, funcs):
        return Stmt("helpers.Y = %s + %d" % (self._pick(ints), self.const()), {})

    def _read_module_global(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        return Stmt("%s = helpers.Y * %d" % (t, self.rng.randint(1, 3)), {t: "int"})

    def _log_append(self, env, ints, lists, dicts, funcs):
        return Stmt("helpers.LOG.append(%s)" % self._pick(ints), {})

    def _log_len(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        return Stmt("%s = len(helpers.LOG) + sum(helpers.LOG)" % t, {t: "int"})

    def _make_tally(self, env, ints, lists, dicts, funcs):
        return Stmt("tl = Tally()", {"tl": "tally"})

    def _tally_get(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        return Stmt("%s = tl[%d]" % (t, self.const()), {t: "int"})

    def _tally_n(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        return Stmt("%s = tl.n + %d" % (t, self.const()), {t: "int"})

    # -- mutation through calls and module state --------------------------------------

    def _add_to(self, env, ints, lists, dicts, funcs):
        l = self._pick(lists)
        return Stmt("add_to(%s, %s)" % (l, self._pick(ints) if ints else str(self.const())), {l: "list"})

    def _add_in_expr(self, env, ints, lists, dicts, funcs):
        t, l = self._new("int"), self._pick(lists)
        return Stmt("%s = len(%s) + (add_to(%s, %d) or %d)" % (t, l, l, self.const(), self.const()), {t: "int"})

    def _pop_in_expr(self, env, ints, lists, dicts, funcs):
        t, l = self._new("int"), self._pick(lists)
        return Stmt("%s = len(%s) * %d + %s.pop()" % (t, l, self.const(), l), {t: "int"})

    def _nonlocal_def(self, env, ints, lists, dicts, funcs):
        t, i = self._new("func"), self._pick(ints)
        return Stmt("def %s(v):\n    nonlocal %s\n    %s = %s + v\n    return %s" % (t, i, i, i, i), {t: "func"})

    def _counter(self, env, ints, lists, dicts, funcs):
        t = self._new("func")
        return Stmt("%s = make_counter(%s)" % (t, self._pick(ints)), {t: "func"})

    def _bump(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        if self.rng.random() < 0.3:
            return Stmt("%s = helpers.COUNT * %d" % (t, self.const()), {t: "int"})
        return Stmt("%s = bump(%s) + %d" % (t, self._pick(ints), self.const()), {t: "int"})

    def _global_def(self, env, ints, lists, dicts, funcs):
        t = self._new("func")
        return Stmt("def %s(v):\n    global G\n    G = G + v + %d\n    return G" % (t, self.const()), {t: "func"})

    def _read_g(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        return Stmt("%s = G + %d" % (t, self.const()), {t: "int"})

    def _make_iter(self, env, ints, lists, dicts, funcs):
        t = self._new("iter")
        choices = []
        if lists:
            l = self._pick(lists)
            choices += ["iter(%s)" % l, "(v * %d for v in %s)" % (self.const(), l)]
        if ints:
            choices.append("gen(%s)" % self._pick(ints))
        return Stmt("%s = %s" % (t, self.rng.choice(choices)), {t: "iter"})

    def _consume(self, env, ints, lists, dicts, funcs):
        it = self._pick(self_names(env, "iter"))
        r = self.rng.random()
        if r < 0.5:
            t = self._new("int")
            return Stmt("%s = next(%s, %d)" % (t, it, self.const()), {t: "int"})
        if r < 0.8:
            t = self._new("int")
            return Stmt("%s = sum(%s)" % (t, it), {t: "int"})
        t = self._new("list")
        return Stmt("%s = list(%s)" % (t, it), {t: "list"})

    def _make_grid(self, env, ints, lists, dicts, funcs):
        return Stmt("grid = [[%s], [%s, %d]]" % (self._pick(ints), self._pick(ints), self.const()), {"grid": "grid"})

    def _row(self, env, ints, lists, dicts, funcs):
        t = self._new("list")
        return Stmt("%s = grid[%d]" % (t, self.rng.randint(0, 1)), {t: "list"})

    def _grid_sum(self, env, ints, lists, dicts, funcs):
        t = self._new("int")
        return Stmt("%s = sum(grid[%d]) + len(grid)" % (t, self.rng.randint(0, 1)), {t: "int"})

    def _for_rows(self, env, ints, lists, dicts, funcs):
        t = self._new("list")
        return Stmt("for %s in grid:\n    %s.append(%d)" % (t, t, self.const()), {t: "list"})

    def _del(self, env, ints, lists, dicts, funcs):
        name = self._pick(sorted(env))
        return Stmt("del %s" % name, {})

    # -- edits ----------------------------------------------------------------------

    def edit(self, program):
        """A new Program with one random edit applied, and its description."""
        r = self.rng
        p = program.copy()
        kind = r.choice(["change", "change", "insert", "insert", "delete", "rename", "tweak", "tweak", "helper"])
        if kind in ("change", "delete", "tweak", "rename") and not p.stmts:
            kind = "insert"
        if kind == "change":
            pos = r.randrange(len(p.stmts))
            p.stmts[pos] = self.statement(p.env_before(pos))
        elif kind == "insert":
            pos = r.randint(0, len(p.stmts))
            p.stmts.insert(pos, self.statement(p.env_before(pos)))
        elif kind == "delete":
            del p.stmts[r.randrange(len(p.stmts))]
        elif kind == "tweak":
            pos = r.randrange(len(p.stmts))
            s = p.stmts[pos]
            numbers = list(re.finditer(r"\b\d+\b", s.text))
            if numbers:
                m = r.choice(numbers)
                # A quarter of the tweaks keep the value (an edit whose
                # statement produces an equal value stops propagation).
                same = r.random() < 0.25
                new = "(%s + 0)" % m.group() if same else str(r.randint(0, 9))
                s.text = s.text[: m.start()] + new + s.text[m.end():]
            else:
                p.stmts[pos] = self.statement(p.env_before(pos))
        elif kind == "rename":
            old = r.choice(sorted({n for s in p.stmts for n in s.defs}))
            kind_of = TYPES[old]
            new = r.choice([n for n in TYPES if TYPES[n] == kind_of])
            pattern = re.compile(r"\b%s\b" % re.escape(old))
            for s in p.stmts:
                s.text = pattern.sub(new, s.text)
                if old in s.defs:
                    del s.defs[old]
                    s.defs[new] = kind_of
            kind = "rename %s->%s" % (old, new)
        else:
            key = r.choice(["K", "c1", "c2", "c3", "c4", "c5", "extra"])
            p.helper[key] = r.randint(0, 9) if key != "c1" else r.randint(1, 4)
            kind = "helper %s" % key
        return p, kind
