// Command berthd serves the Placement API. This is a minimal bootstrap
// (DATABASE_URL and PORT only); the full configuration replaces it.
package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/ledger"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	url := os.Getenv("DATABASE_URL")
	if err := ledger.Migrate(ctx, url); err != nil {
		log.Error("migrate", "error", err)
		os.Exit(1)
	}
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: url, Logger: log})
	if err != nil {
		log.Error("open", "error", err)
		os.Exit(1)
	}
	defer store.Close()
	api, err := httpapi.New(httpapi.Config{}, store, log)
	if err != nil {
		log.Error("api", "error", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: api}
	l, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		log.Error("listen", "error", err)
		os.Exit(1)
	}
	go func() { <-ctx.Done(); _ = srv.Shutdown(context.Background()) }()
	if err := srv.Serve(httpapi.WrapListener(l)); err != http.ErrServerClosed {
		log.Error("serve", "error", err)
		os.Exit(1)
	}
}
