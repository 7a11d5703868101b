"""Knowledge in the window: the panel listing the folders and files a chat or a project
searches, with their indexing progress, and the passages a request carried, with their
sources."""
