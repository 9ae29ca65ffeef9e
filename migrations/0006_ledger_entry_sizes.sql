-- An entry's size now counts its visibility, history and publish as the row stores them,
-- besides `"name":value`; rows written before counted the value only.
UPDATE `ledger_entries` SET `size` = `size`
	+ coalesce(length(CAST(`visibility` AS BLOB)), 0)
	+ coalesce(length(CAST(`history` AS BLOB)), 0)
	+ coalesce(length(CAST(`publish` AS BLOB)), 0);
