DROP TABLE IF EXISTS gang_members;
