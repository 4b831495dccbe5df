// The history database's schema as an append-only list of migrations: migration i (1-based)
// takes PRAGMA user_version from i-1 to i. Never edit a released migration; add the next one.
#pragma once

#include "harness/history/sqlite.h"

namespace lockstep::history {

// Brings the database to `target` (default: the latest) in one write transaction; a database
// already at or past target is left alone, except that one newer than this build throws.
void migrate(sql::Db& db, int target = -1);

int user_version(sql::Db& db);

}  // namespace lockstep::history
