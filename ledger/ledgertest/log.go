package ledgertest

import "log/slog"

// discardLogger keeps the cluster's and the template store's progress
// logs out of test output; failures still surface as errors.
func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
