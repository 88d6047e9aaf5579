;;; init.el --- Emacs 30 + Eglot against `ripple lsp', as docs/editors.md sets it up  -*- lexical-binding: t -*-
;; Loaded with `emacs -nw -Q -l init.el' by emacs_test.go (in tmux).  The
;; ripple binary is $RIPPLE_BIN.
(require 'eglot)
(setq inhibit-startup-screen t
      make-backup-files nil auto-save-default nil create-lockfiles nil
      eglot-autoshutdown t
      ;; Diagnostics as text at the end of their line (Emacs 30), so the
      ;; screen capture shows them.
      flymake-show-diagnostics-at-end-of-line 'short)
(add-to-list 'eglot-server-programs
             `((python-mode python-ts-mode) . (,(or (getenv "RIPPLE_BIN") "ripple") "lsp")))
(add-hook 'eglot-managed-mode-hook (lambda () (eglot-inlay-hints-mode 1)))
(add-hook 'python-mode-hook #'eglot-ensure)
